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
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Hash returns a digest of what p does, as 64 hexadecimal characters: it
// changes when a user edits the patches in a way that can change what
// they do, and not when they only reformat them.
//
// What counts:
//
//   - the order of configPatches and of strategicPatches, and which list an
//     entry is in: CABPT applies them in that order, and a later one can
//     undo an earlier one;
//   - every op, path and value;
//   - in a strategic patch, every key and every scalar as YAML resolves it
//     (its tag and its text): "1" and 1 differ, and so do 1.0 and 1.
//
// What does not count: the order of keys in a map (JSON values and YAML
// mappings alike), comments, indentation, quoting and flow or block style,
// anchors (an alias counts as what it points to), and Source. A change
// Hash sees that does not change what the patches do costs a Converged
// check; a change it does not see would never be rolled out, so when in
// doubt it counts.
func (p Patches) Hash() string {
	canon := struct {
		ConfigPatches    []any `json:"configPatches"`
		StrategicPatches []any `json:"strategicPatches"`
	}{ConfigPatches: []any{}, StrategicPatches: []any{}}
	for _, op := range p.ConfigPatches {
		canon.ConfigPatches = append(canon.ConfigPatches, []any{op.Op, op.Path, canonicalJSON(op.Value)})
	}
	for _, s := range p.StrategicPatches {
		canon.StrategicPatches = append(canon.StrategicPatches, canonicalYAML(s))
	}
	data, err := json.Marshal(canon)
	if err != nil {
		// Not reached: every value above is made of strings, JSON numbers
		// read by encoding/json, lists and maps. Hash the text instead.
		data = fmt.Appendf(nil, "%q", append(slices.Clone(p.StrategicPatches), fmt.Sprint(p.ConfigPatches)))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON returns the JSON value raw with its objects' keys sorted
// (encoding/json sorts map keys) and numbers as written, or raw as a string
// when it is not JSON.
func canonicalJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []any{"unparsed", string(raw)}
	}
	return v
}

// canonicalYAML returns the documents of the YAML stream s as plain values:
// a mapping as its [key, value] pairs sorted by key, a sequence as a list,
// a scalar as its resolved tag and its text. A stream that does not parse
// is its text.
func canonicalYAML(s string) any {
	dec := kyaml.NewDecoder(strings.NewReader(s))
	docs := []any{}
	for {
		var n kyaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			return []any{"unparsed", s}
		}
		w := &nodeWalker{budget: maxCanonicalNodes}
		doc := w.canonical(&n)
		if w.budget < 0 {
			return []any{"unparsed", s}
		}
		docs = append(docs, doc)
	}
}

// maxCanonicalNodes bounds how many nodes canonicalYAML visits in a
// document, aliases expanded, so that a patch built to expand without end
// (a "billion laughs") cannot hang it: such a patch is hashed as text.
const maxCanonicalNodes = 1 << 20

// nodeWalker turns YAML nodes into canonical values within a budget.
type nodeWalker struct {
	// budget is how many more nodes may be visited; below zero, the walk
	// gave up.
	budget int
}

// canonical returns n as canonicalYAML describes.
func (w *nodeWalker) canonical(n *kyaml.Node) any {
	w.budget--
	if n == nil || w.budget < 0 {
		return nil
	}
	switch n.Kind {
	case kyaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return w.canonical(n.Content[0])
	case kyaml.AliasNode:
		return w.canonical(n.Alias)
	case kyaml.MappingNode:
		type pair struct {
			key   string
			entry []any
		}
		pairs := make([]pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := w.canonical(n.Content[i]), w.canonical(n.Content[i+1])
			key, err := json.Marshal(k)
			if err != nil {
				// Not reached: k is made of strings, lists and maps.
				key = []byte(n.Content[i].Value)
			}
			pairs = append(pairs, pair{key: string(key), entry: []any{k, v}})
		}
		slices.SortStableFunc(pairs, func(a, b pair) int { return strings.Compare(a.key, b.key) })
		out := make([]any, 0, len(pairs))
		for _, p := range pairs {
			out = append(out, p.entry)
		}
		return map[string]any{"map": out}
	case kyaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, w.canonical(c))
		}
		return map[string]any{"seq": out}
	case kyaml.ScalarNode:
		return map[string]any{"tag": n.ShortTag(), "value": n.Value}
	default:
		return nil
	}
}
