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

package docs_test

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/integration/docs"
)

const bookDir = "docs/book/src"

// pages returns the README and every page of the book, relative to the
// repository root.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(envtest.RepoRoot(), bookDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(envtest.RepoRoot(), path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Listing the pages of the book: %v", err)
	}
	return out
}

// TestDocumentationLinks follows every relative link of the README and the
// book: the file must exist and, for a fragment, have a heading of that
// anchor. A link out of the repository (http, https, mailto) is not
// followed.
func TestDocumentationLinks(t *testing.T) {
	parsed := map[string]docs.Page{}
	read := func(page string) (docs.Page, error) {
		if p, ok := parsed[page]; ok {
			return p, nil
		}
		data, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), filepath.FromSlash(page)))
		if err != nil {
			return docs.Page{}, err
		}
		parsed[page] = docs.Parse(data)
		return parsed[page], nil
	}
	var broken []string
	all := pages(t)
	for _, page := range all {
		p, err := read(page)
		if err != nil {
			t.Fatalf("Reading %s: %v", page, err)
		}
		for _, l := range p.Links {
			u, err := url.Parse(l.Target)
			if err != nil {
				broken = append(broken, page+":"+itoa(l.Line)+": "+l.Target+": "+err.Error())
				continue
			}
			if u.Scheme != "" || strings.HasPrefix(l.Target, "//") {
				continue
			}
			target := page
			if u.Path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), u.Path)))
			}
			if strings.HasPrefix(target, "../") {
				broken = append(broken, page+":"+itoa(l.Line)+": "+l.Target+": points out of the repository")
				continue
			}
			if _, err := os.Stat(filepath.Join(envtest.RepoRoot(), filepath.FromSlash(target))); err != nil {
				broken = append(broken, page+":"+itoa(l.Line)+": "+l.Target+": no such file "+target)
				continue
			}
			if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tp, err := read(target)
			if err != nil {
				t.Fatalf("Reading %s: %v", target, err)
			}
			if !tp.Anchors[u.Fragment] {
				broken = append(broken, page+":"+itoa(l.Line)+": "+l.Target+": "+target+" has no heading #"+u.Fragment)
			}
		}
	}
	if len(broken) > 0 {
		t.Errorf("Broken links:\n%s", strings.Join(broken, "\n"))
	}
	if len(all) < 10 {
		t.Errorf("Found only %v: the book is missing", all)
	}
}

// TestBookTableOfContents checks that SUMMARY.md, the book's table of
// contents, lists every page of the book.
func TestBookTableOfContents(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), bookDir, "SUMMARY.md"))
	g.Expect(err).NotTo(HaveOccurred())
	var listed []string
	for _, l := range docs.Parse(data).Links {
		if l.Target != "" {
			listed = append(listed, bookDir+"/"+l.Target)
		}
	}
	for _, page := range pages(t) {
		if page == "README.md" || page == bookDir+"/SUMMARY.md" {
			continue
		}
		g.Expect(slices.Contains(listed, page)).To(BeTrue(), "SUMMARY.md does not list %s", page)
	}
}

// TestParse checks the checker: headings and their anchors as GitHub makes
// them, links outside code only.
func TestParse(t *testing.T) {
	page := docs.Parse([]byte("# Versions: upgrade paths and following releases\n" +
		"## `kubectl tollgate`\n" +
		"## Notes\n## Notes\n" +
		"### What the tests run for real, and what is simulated\n" +
		"See [the plugin](#kubectl-tollgate), ![a figure](img/a.png \"A\") and [a [nested] text](other.md#x).\n" +
		"Code `[not](a-link.md)` is not a link.\n" +
		"```yaml\n# not a heading\n[not](a-link.md)\n```\n" +
		"[out](https://cluster-api.sigs.k8s.io)\n"))
	g := NewWithT(t)
	g.Expect(page.Anchors).To(Equal(map[string]bool{
		"versions-upgrade-paths-and-following-releases": true,
		"kubectl-tollgate": true,
		"notes":            true,
		"notes-1":          true,
		"what-the-tests-run-for-real-and-what-is-simulated": true,
	}))
	var targets []string
	for _, l := range page.Links {
		targets = append(targets, l.Target)
	}
	g.Expect(targets).To(Equal([]string{"#kubectl-tollgate", "img/a.png", "other.md#x", "https://cluster-api.sigs.k8s.io"}))
	g.Expect(page.Links[0].Line).To(Equal(6))
}

func itoa(n int) string { return strconv.Itoa(n) }
