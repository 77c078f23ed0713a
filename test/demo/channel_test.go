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

package demo

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestDemoChannel runs `make demo DEMO_ARGS=--channel` in-process: the
// release goes through lab's soak, dev's soak and analysis, and prod's
// approval, one Cluster per stage, which CAPI makes; each Cluster gets it
// only once its stage's gate opened, and CAPI reports it on every Machine.
func TestDemoChannel(t *testing.T) {
	g := NewWithT(t)
	text := runDemo(t, 6*time.Minute, "--channel", "--soak=5s", "--approve-after=1s", "--reboot=300ms", "--timeout=4m")

	g.Expect(text).To(ContainSubstring("Created ReleaseChannel talos-fleet carrying v1.13.0: lab (soak 5s), then dev (soak 10s"))
	// The release's way, a line per change, in the stages' order.
	var order []string
	for _, want := range []string{
		`v1\.13\.0 lab  Rolling 0/1`, `v1\.13\.0 lab  Soaking until`, `v1\.13\.0 lab  Passed`,
		`v1\.13\.0 dev  Rolling 0/1`, `v1\.13\.0 dev  Soaking until .* \(\d+ measured, 0 failed\)`, `v1\.13\.0 dev  Passed .* \(\d+ measured, 0 failed\)`,
		`v1\.13\.0 prod WaitingForApproval`, `alice@example\.com approves`, `v1\.13\.0 prod Passed .* \(approved by alice@example\.com\)`,
	} {
		loc := regexp.MustCompile(want).FindStringIndex(text)
		g.Expect(loc).NotTo(BeNil(), "line %q", want)
		order = append(order, text[loc[0]:loc[1]])
		if len(order) > 1 {
			prev := regexp.MustCompile(regexp.QuoteMeta(order[len(order)-2])).FindStringIndex(text)
			g.Expect(loc[0]).To(BeNumerically(">", prev[0]), "%q comes after %q", want, order[len(order)-2])
		}
	}
	// The pipeline, as kubectl tollgate channel draws it.
	g.Expect(text).To(ContainSubstring("ReleaseChannel talos-fleet (versions, supersede Halted)\n  UpToDate: no version is in flight; the newest, v1.13.0, is Completed\n  lab → dev → prod\n"))
	g.Expect(text).To(MatchRegexp(`(?m)^prod\s+dev\s+1/1\s+v1\.13\.0\s+Passed \S+ \(approved by alice@example\.com\)$`))
	for _, stage := range []string{"lab", "dev", "prod"} {
		g.Expect(text).To(MatchRegexp(`(?m)^  `+stage+` Machine \S+  "Talos \(v1\.13\.0\)"$`), "CAPI reports the release on the Machine of %s", stage)
	}
}

func TestParseChannel(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "channel", args: []string{"--channel"}},
		{name: "channel with a short soak", args: []string{"--channel", "--soak=1s"}, wantErr: "--soak must be at least 5s"},
		{name: "channel and capi-driven", args: []string{"--channel", "--capi-driven"}, wantErr: "give it without --capi-driven"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := parse(tt.args, &bytes.Buffer{})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.machines).To(Equal(1), "a Cluster of one Machine per stage")
			g.Expect(c.workers).To(Equal(0))
		})
	}
}
