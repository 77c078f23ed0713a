/*
Copyright 2026 The Tollgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import "unicode/utf8"

// MaxMessageLength is the longest message of a status, in characters: the
// +kubebuilder:validation:MaxLength marker of every message field of this
// API (a record's, a hook's, a removal's, a health check's, a machine
// configuration's), of status.blockedBy and of a bypass record. The
// apiserver refuses a longer one, and the whole status write with it.
// Messages that have a shorter limit of their own (a health check's failure
// reason) or a longer one (a condition that names every template or held
// Machine, within metav1.Condition's) name it beside their writer, and are
// cut by Truncate or TruncateStart all the same.
const MaxMessageLength = 1024

// TruncationMarker stands where Truncate or TruncateStart cut a message, so
// that a reader knows there was more.
const TruncationMarker = "…"

// Truncate cuts s to at most n characters (runes, as the apiserver counts
// them for a maxLength), never splitting one, keeping its start: a string
// that was cut ends with TruncationMarker. n <= 0 leaves s whole. It is the
// one truncation of the messages Tollgate writes and shows.
func Truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + TruncationMarker
}

// TruncateStart is Truncate keeping the end of s, for a text whose verdict
// comes last (a container's output): a string that was cut starts with
// TruncationMarker, followed by its last n-1 characters.
func TruncateStart(s string, n int) string {
	count := utf8.RuneCountInString(s)
	if n <= 0 || count <= n {
		return s
	}
	return TruncationMarker + string([]rune(s)[count-(n-1):])
}
