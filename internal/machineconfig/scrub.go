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

package machineconfig

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// This file keeps the values of a machine configuration out of the errors
// of this package. A machine configuration holds the cluster's CAs and
// keys, its tokens and its encryption secrets, and an error of this package
// ends up in a condition, an event and a log line. Our own errors name
// fields and never quote a value; the errors of Talos' loader and of the
// patch libraries we wrap can quote one, and are scrubbed here:
//
//   - the loader lists unknown keys with their values ("unknown keys found
//     during decoding:" and a YAML document): only the keys' paths are kept;
//   - YAML type errors quote the value in backquotes (its first 7
//     characters when it is long): the quote is dropped;
//   - any string of the inputs (the configurations and patches the error
//     is about) that is 16 characters or longer (keys, certificates, IDs
//     and tokens are), or 4 or longer under a key whose name says it is
//     secret (token, secret, key, crt, cert, password, auth), is replaced
//     by "<redacted>" wherever it still appears. Shorter strings (a machine
//     type, a version) are left, so that Talos' messages still read.

// redacted replaces a value in an error.
const redacted = "<redacted>"

// unknownKeysMarker starts the list of unknown keys in a loader error.
const unknownKeysMarker = "unknown keys found during decoding:"

// backquoted matches a value a YAML error quotes.
var backquoted = regexp.MustCompile("`[^`]*`")

// scrub returns the message of err without the values of inputs.
func scrub(err error, inputs ...[]byte) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.Index(msg, unknownKeysMarker); i >= 0 {
		msg = msg[:i+len(unknownKeysMarker)] + " " + unknownKeys(msg[i+len(unknownKeysMarker):])
	}
	msg = backquoted.ReplaceAllString(msg, "`"+redacted+"`")
	for _, v := range secretValues(inputs...) {
		msg = strings.ReplaceAll(msg, v, redacted)
	}
	return msg
}

// unknownKeys returns the paths of the keys of the YAML document listing,
// without their values.
func unknownKeys(listing string) string {
	var doc any
	if err := yaml.Unmarshal([]byte(listing), &doc); err != nil {
		return "(not shown: the list may hold values)"
	}
	var paths []string
	collectKeys(doc, "", &paths)
	if len(paths) == 0 {
		return "(not shown: the list may hold values)"
	}
	sort.Strings(paths)
	return strings.Join(paths, ", ")
}

// collectKeys appends to paths the dotted path of every leaf of v.
func collectKeys(v any, prefix string, paths *[]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && prefix != "" {
			*paths = append(*paths, prefix)
		}
		for k, child := range t {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			collectKeys(child, p, paths)
		}
	case []any:
		for _, child := range t {
			collectKeys(child, prefix+"[]", paths)
		}
	default:
		if prefix != "" {
			*paths = append(*paths, prefix)
		}
	}
}

// secretValues returns the strings of inputs scrub removes from a message,
// and the 7-character prefix a YAML error shows of each long one, longest
// first so that a value is removed before a part of it.
func secretValues(inputs ...[]byte) []string {
	seen := map[string]bool{}
	for _, in := range inputs {
		for _, doc := range yamlDocuments(in) {
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil {
				continue
			}
			collectStrings(v, false, seen)
		}
	}
	values := make([]string, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	slices.SortFunc(values, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	return values
}

// collectStrings adds to seen the strings of v worth removing; secret says
// whether v is under a key whose name says it is secret.
func collectStrings(v any, secret bool, seen map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			collectStrings(child, secret || secretKey(k), seen)
		}
	case []any:
		for _, child := range t {
			collectStrings(child, secret, seen)
		}
	case string:
		if len(t) >= 16 || (secret && len(t) >= 4) {
			seen[t] = true
		}
		if len(t) > 10 {
			seen[t[:7]+"..."] = true
		}
	}
}

// secretKey reports whether a key's name says its value is secret.
func secretKey(key string) bool {
	key = strings.ToLower(key)
	for _, word := range []string{"token", "secret", "key", "crt", "cert", "password", "auth"} {
		if strings.Contains(key, word) {
			return true
		}
	}
	return false
}

// yamlDocuments splits a YAML stream into its documents; a stream that
// cannot be split is one document.
func yamlDocuments(in []byte) [][]byte {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			return append(docs, in)
		}
		docs = append(docs, doc)
	}
}
