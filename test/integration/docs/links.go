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

package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Link is a link of a Markdown page.
type Link struct {
	// Line is the line of the page it is on, from 1.
	Line int
	// Target is what the link points to, as written: a URL, a path
	// relative to the page, a path with a #fragment, or a #fragment alone.
	Target string
}

// Page is what Parse reads from a Markdown page.
type Page struct {
	// Links are the page's inline links and images, outside code.
	Links []Link
	// Anchors are the fragments of the page's headings, as GitHub makes
	// them: a second heading of the same text gets -1, a third -2.
	Anchors map[string]bool
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title"; text may hold one level of brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
)

// Parse reads the links and heading anchors of a Markdown page. Fenced code
// blocks and code spans hold no links.
func Parse(data []byte) Page {
	p := Page{Anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if f := fenceOf(trimmed); f != "" {
			fence = f
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			a := Anchor(m[2])
			if k := seen[a]; k > 0 {
				p.Anchors[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				p.Anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			p.Links = append(p.Links, Link{Line: n, Target: m[1]})
		}
	}
	return p
}

// fenceOf returns the fence a line opens (``` or ~~~, as long as written),
// or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(line, c+c+c) {
			return line[:len(line)-len(strings.TrimLeft(line, c))]
		}
	}
	return ""
}

// Anchor returns the fragment GitHub gives a heading of text: lower case,
// inline Markdown and punctuation other than - and _ dropped, spaces made -.
func Anchor(text string) string {
	// A link in a heading counts by its text.
	text = inlineLink.ReplaceAllStringFunc(text, func(s string) string {
		return s[strings.Index(s, "[")+1 : strings.LastIndex(s, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
