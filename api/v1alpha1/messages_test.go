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

package v1alpha1_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestTruncate checks the one truncation of messages, from the start and
// from the end: it counts characters as the apiserver counts a maxLength,
// never cuts a multi-byte character in half, and says where it cut.
func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		name      string
		in        string
		n         int
		want      string
		wantStart string
	}{
		{name: "short enough", in: "abc", n: 3, want: "abc", wantStart: "abc"},
		{name: "cut", in: "abcdef", n: 4, want: "abc…", wantStart: "…def"},
		{name: "no limit", in: "abcdef", n: 0, want: "abcdef", wantStart: "abcdef"},
		{name: "a negative limit", in: "abcdef", n: -1, want: "abcdef", wantStart: "abcdef"},
		{name: "a limit of one", in: "abcdef", n: 1, want: "…", wantStart: "…"},
		{name: "empty", in: "", n: 4, want: "", wantStart: ""},
		{name: "multi-byte characters, short enough in characters, not in bytes", in: "ééé", n: 3, want: "ééé", wantStart: "ééé"},
		{name: "a two-byte character at the boundary", in: "abcé€z", n: 5, want: "abcé…", wantStart: "…cé€z"},
		{name: "a three-byte character at the boundary", in: "ab€€€", n: 4, want: "ab€…", wantStart: "…€€€"},
		{name: "a four-byte character at the boundary", in: "a😀😀b", n: 3, want: "a😀…", wantStart: "…😀b"},
		{name: "combining characters count one by one", in: "e\u0301e\u0301", n: 3, want: "e\u0301…", wantStart: "…e\u0301"},
		{name: "the marker itself", in: "……………", n: 3, want: "………", wantStart: "………"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			for _, got := range []string{upgradev1.Truncate(tt.in, tt.n), upgradev1.TruncateStart(tt.in, tt.n)} {
				g.Expect(utf8.ValidString(got)).To(BeTrue(), "%q is valid UTF-8", got)
				if tt.n > 0 {
					g.Expect(utf8.RuneCountInString(got)).To(BeNumerically("<=", tt.n))
				}
			}
			g.Expect(upgradev1.Truncate(tt.in, tt.n)).To(Equal(tt.want))
			g.Expect(upgradev1.TruncateStart(tt.in, tt.n)).To(Equal(tt.wantStart))
		})
	}
}

// TestTruncateMaxMessageLength checks that a message cut at
// MaxMessageLength fits the MaxLength of every message field however many
// bytes its characters take.
func TestTruncateMaxMessageLength(t *testing.T) {
	g := NewWithT(t)
	for _, char := range []string{"a", "é", "€", "😀"} {
		long := strings.Repeat(char, upgradev1.MaxMessageLength+1)
		for _, got := range []string{upgradev1.Truncate(long, upgradev1.MaxMessageLength), upgradev1.TruncateStart(long, upgradev1.MaxMessageLength)} {
			g.Expect(utf8.RuneCountInString(got)).To(Equal(upgradev1.MaxMessageLength), "a message of %q", char)
			g.Expect(got).To(ContainSubstring(upgradev1.TruncationMarker))
		}
		g.Expect(upgradev1.Truncate(long[:len(long)-len(char)], upgradev1.MaxMessageLength)).To(Equal(long[:len(long)-len(char)]), "a message of %q that fits", char)
	}
}
