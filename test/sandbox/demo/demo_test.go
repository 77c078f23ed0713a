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
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestDemoEndToEnd runs `make demo` in-process with one control-plane and
// one worker Machine and a health check that fails once.
func TestDemoEndToEnd(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := Run(ctx, []string{"--machines=2", "--workers=1", "--fail-check=1", "--reboot=300ms", "--timeout=90s"}, &out, &errOut)
	t.Logf("The demo took %s; its output:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	g.Expect(code).To(Equal(0), "stderr: %s", errOut.String())

	text := out.String()
	g.Expect(text).To(ContainSubstring("Rollout Completed: 2/2 Machines of Cluster tollgate-demo/alpha on Talos v1.13.0"))
	for _, row := range []string{
		`alpha-cp-0\s+control plane\s+v1\.12\.4 -> v1\.13\.0\s+Completed(\s+\d+\.\ds){6}`,
		`alpha-worker-0\s+worker\s+v1\.12\.4 -> v1\.13\.0\s+Completed(\s+\d+\.\ds){6}`,
	} {
		g.Expect(text).To(MatchRegexp(row), "summary row")
	}
	g.Expect(text).To(MatchRegexp(`ClusterHealthCheck workload-healthy: \d+ runs, 1 failed`))
	g.Expect(text).To(ContainSubstring("Hook Jobs run, per point: preReboot 2, nodeReady 2"))

	// The failing check's reason was shown live, as the rollout's blocker.
	var shown bool
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "blocked by: waiting for healthchecks to pass") && strings.Contains(l, "simulated failure 1 of 1") {
			shown = true
		}
	}
	g.Expect(shown).To(BeTrue(), "the failing check's reason in a blocked-by line")
	// Every Machine was shown in every phase that matters.
	for _, phase := range []string{"Draining", "WaitingForHold:preReboot", "Rebooting", "WaitingForHold:postUpgrade", "Completed"} {
		g.Expect(text).To(MatchRegexp(`alpha-worker-0\s+worker\s+`+regexp.QuoteMeta(phase)), "phase %s shown", phase)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "defaults"},
		{name: "one machine", args: []string{"--machines=1", "--workers=0"}},
		{name: "no control plane", args: []string{"--machines=2", "--workers=2"}, wantErr: "leaves no control-plane Machine"},
		{name: "short interval", args: []string{"--check-interval=1s"}, wantErr: "at least 5s"},
		{name: "negative failures", args: []string{"--fail-check=-1"}, wantErr: "0 or more"},
		{name: "unknown flag", args: []string{"--nodes=3"}, wantErr: "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parse(tt.args, &bytes.Buffer{})
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
