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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// Machine names, as CAPI and the stand-in control-plane provider make them.
const (
	controlPlaneMachine = `alpha-control-plane-[a-z0-9]{5}`
	workerMachine       = `alpha-md-0-[a-z0-9]+-[a-z0-9]{5}`
)

// runDemo runs the demo in-process with args and returns what it printed;
// it fails the test unless the demo exits 0.
func runDemo(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	envtest.SkipWithoutAssets(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := Run(ctx, args, &out, &errOut)
	t.Logf("The demo took %s; its output:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	NewWithT(t).Expect(code).To(Equal(0), "stderr: %s", errOut.String())
	return out.String()
}

// nodeInfoLines returns the lines where the demo says what CAPI reports in
// each Machine's status.nodeInfo.osImage, by Machine name.
func nodeInfoLines(text string) map[string]string {
	lines := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  Machine (\S+)\s+"([^"]*)"$`).FindAllStringSubmatch(text, -1) {
		lines[m[1]] = m[2]
	}
	return lines
}

// TestDemoEndToEnd runs `make demo` in-process with one control-plane and
// one worker Machine, which CAPI core makes, and a health check that fails
// once; after the rollout CAPI reports the target in every Machine's
// status.nodeInfo, as its Machine controller copied it from the Node.
func TestDemoEndToEnd(t *testing.T) {
	g := NewWithT(t)
	text := runDemo(t, 3*time.Minute, "--machines=2", "--workers=1", "--fail-check=1", "--reboot=300ms", "--timeout=90s")

	g.Expect(text).To(ContainSubstring("Rollout Completed: 2/2 Machines of Cluster tollgate-demo/alpha on Talos v1.13.0"))
	for _, row := range []string{
		controlPlaneMachine + `\s+control plane\s+v1\.12\.4 -> v1\.13\.0\s+Completed(\s+\d+\.\ds){6}`,
		workerMachine + `\s+worker\s+v1\.12\.4 -> v1\.13\.0\s+Completed(\s+\d+\.\ds){6}`,
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
		g.Expect(text).To(MatchRegexp(workerMachine+`\s+worker\s+`+regexp.QuoteMeta(phase)), "phase %s shown", phase)
	}

	// CAPI made the Machines and reports the new Talos of each.
	g.Expect(text).To(MatchRegexp(`Created Cluster tollgate-demo/alpha as a user does .*: CAPI made 1 control-plane and 1 worker Machines on Talos v1\.12\.4`))
	nodeInfo := nodeInfoLines(text)
	g.Expect(nodeInfo).To(HaveLen(2))
	for name, osImage := range nodeInfo {
		g.Expect(name).To(Or(MatchRegexp(`^`+controlPlaneMachine+`$`), MatchRegexp(`^`+workerMachine+`$`)))
		g.Expect(osImage).To(Equal("Talos (v1.13.0)"), "Machine %s: status.nodeInfo.osImage", name)
	}
}

// TestDemoHTTPCheck runs the demo with --http-check, without CAPI core:
// the rollout's health check is a GET the manager sends to the demo's
// health endpoint, which fails once; it holds the rollout, then lets it
// complete, and no health-check Job runs.
func TestDemoHTTPCheck(t *testing.T) {
	g := NewWithT(t)
	text := runDemo(t, 3*time.Minute, "--capi=false", "--machines=2", "--workers=1", "--fail-check=1", "--http-check", "--hold=0", "--reboot=300ms", "--timeout=90s")

	g.Expect(text).To(MatchRegexp(`ClusterHealthCheck "workload-healthy" \(http, GET http://127\.0\.0\.1:\d+/healthz\) every 5s \(fails 1 time\(s\) first\)`))
	g.Expect(text).To(ContainSubstring("Rollout Completed: 2/2 Machines of Cluster tollgate-demo/alpha on Talos v1.13.0"))
	g.Expect(text).To(MatchRegexp(`ClusterHealthCheck workload-healthy \(http, http://127\.0\.0\.1:\d+\): \d+ requests, 1 failed \(last reason: "HTTP 503 Service Unavailable: 2 of 14 Pods not Ready in kube-system: [^"]+"\); it held the rollout \d+\.\ds in WaitingForHealthChecks`))
}

// TestDemoCAPIDriven runs `make demo DEMO_ARGS=--capi-driven` in-process:
// Tollgate is CAPI's in-place update extension, the demo changes the
// MachineDeployment's template to the target installer, and CAPI updates
// both workers in place through Tollgate's gates (a health check that fails
// once, the hooks, a hold): the same Machines before and after, each on the
// target as CAPI reports it; the control plane, no part of the
// MachineDeployment, stays on its Talos.
func TestDemoCAPIDriven(t *testing.T) {
	g := NewWithT(t)
	text := runDemo(t, 4*time.Minute, "--capi-driven", "--machines=3", "--workers=2", "--fail-check=1", "--reboot=300ms", "--hold=1s", "--timeout=2m")

	g.Expect(text).To(ContainSubstring("Started the manager (cmd/manager, as main.go, webhooks on "))
	g.Expect(text).To(ContainSubstring("CAPI's in-place update extension on port "))
	g.Expect(text).To(ContainSubstring("Created TalosUpgradePolicy tollgate-demo/from-templates with targetFrom: CAPI"))
	g.Expect(text).To(MatchRegexp(`Pointed MachineDeployment alpha-md-0 at TalosSimMachineTemplate alpha-md-0-v1-13-0 \(image \S+/siderolabs/installer:v1\.13\.0\)`))
	// Tollgate's gates, shown live: the failing check held CAPI's update
	// for its interval (5s), as every watch of the rollout saw it.
	g.Expect(text).To(MatchRegexp(`blocked by: waiting for healthchecks to pass: .*simulated failure 1 of 1`))
	held := regexp.MustCompile(`it held the rollout (\d+\.\d)s in WaitingForHealthChecks`).FindStringSubmatch(text)
	g.Expect(held).To(HaveLen(2))
	g.Expect(strconv.ParseFloat(held[1], 64)).To(BeNumerically(">=", 4))
	for _, phase := range []string{"Draining", "WaitingForHold:preReboot", "Rebooting", "WaitingForHold:postUpgrade", "Completed"} {
		g.Expect(text).To(MatchRegexp(workerMachine+`\s+worker\s+`+regexp.QuoteMeta(phase)), "phase %s shown", phase)
	}
	g.Expect(text).To(ContainSubstring("Rollout Completed: 2/2 Machines of Cluster tollgate-demo/alpha on Talos v1.13.0"))
	g.Expect(text).To(MatchRegexp(`(?m)^` + workerMachine + `\s+worker\s+v1\.12\.4 -> v1\.13\.0\s+Completed`))
	g.Expect(text).NotTo(MatchRegexp(`(?m)^`+controlPlaneMachine+`\s+control plane\s+v1\.12\.4 -> v1\.13\.0`), "CAPI updates the MachineDeployment's Machines only")

	// What CAPI reports: the workers on the target, the control plane on
	// its own; the same worker Machines before and after.
	nodeInfo := nodeInfoLines(text)
	g.Expect(nodeInfo).To(HaveLen(3))
	var workers []string
	for name, osImage := range nodeInfo {
		if regexp.MustCompile(`^` + workerMachine + `$`).MatchString(name) {
			workers = append(workers, name)
			g.Expect(osImage).To(Equal("Talos (v1.13.0)"), "worker %s", name)
			continue
		}
		g.Expect(name).To(MatchRegexp(`^` + controlPlaneMachine + `$`))
		g.Expect(osImage).To(Equal("Talos (v1.12.4)"), "control plane %s", name)
	}
	slices.Sort(workers)
	g.Expect(workers).To(HaveLen(2))
	g.Expect(text).To(ContainSubstring("The same Machine names before and after: " + strings.Join(workers, ", ") + " (updated in place by CAPI through Tollgate, none replaced)"))
}

// TestDemoDesiredVersions runs `make demo DEMO_ARGS=--desired-versions`
// in-process: the policy keeps the Cluster on v1.12.4, and the demo moves
// it by writing v1.13.0 in the TalosControlPlane, then in the workers'
// MachineDeployment's spec.template.metadata; each object's Machines go
// through the gates in turn, the control plane first, and none is
// replaced.
func TestDemoDesiredVersions(t *testing.T) {
	g := NewWithT(t)
	text := runDemo(t, 4*time.Minute, "--desired-versions", "--machines=3", "--workers=2", "--fail-check=0", "--reboot=300ms", "--hold=0s", "--timeout=2m")

	g.Expect(text).To(ContainSubstring("Created TalosUpgradePolicy tollgate-demo/talos-1-13 to v1.12.4 (it keeps the Cluster"))
	cp := strings.Index(text, "Wrote upgrade.tollgate.dev/desired-talos-version=v1.13.0 in TalosControlPlane alpha-control-plane metadata.annotations")
	cpDone := strings.Index(text, "TalosControlPlane alpha-control-plane: 1 of 1 Machines on v1.13.0, from its own object")
	md := strings.Index(text, "Wrote upgrade.tollgate.dev/desired-talos-version=v1.13.0 in MachineDeployment alpha-md-0 spec.template.metadata.annotations")
	mdDone := strings.Index(text, "MachineDeployment alpha-md-0: 2 of 2 Machines on v1.13.0, from its own object")
	g.Expect([]int{cp, cpDone, md, mdDone}).NotTo(ContainElement(-1), text)
	g.Expect(cp < cpDone && cpDone < md && md < mdDone).To(BeTrue(), "one object after the other, the control plane first")
	nodeInfo := nodeInfoLines(text)
	g.Expect(nodeInfo).To(HaveLen(3))
	var workers []string
	for name, osImage := range nodeInfo {
		g.Expect(osImage).To(Equal("Talos (v1.13.0)"), "Machine %s", name)
		if regexp.MustCompile(`^` + workerMachine + `$`).MatchString(name) {
			workers = append(workers, name)
		}
	}
	slices.Sort(workers)
	g.Expect(workers).To(HaveLen(2))
	g.Expect(text).To(ContainSubstring("The same Machine names before and after: " + strings.Join(workers, ", ") + " (updated in place by Tollgate"))
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
		{name: "capi-driven", args: []string{"--capi-driven"}},
		{name: "capi-driven without CAPI", args: []string{"--capi-driven", "--capi=false"}, wantErr: "--capi-driven needs --capi"},
		{name: "capi-driven without workers", args: []string{"--capi-driven", "--machines=1", "--workers=0"}, wantErr: "needs --workers of at least 1"},
		{name: "desired versions", args: []string{"--desired-versions"}},
		{name: "desired versions without CAPI", args: []string{"--desired-versions", "--capi=false"}, wantErr: "--desired-versions needs --capi"},
		{name: "desired versions and capi-driven", args: []string{"--desired-versions", "--capi-driven"}, wantErr: "give it without --capi-driven"},
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
