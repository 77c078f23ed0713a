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

package soak

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// reconcilingLine is the line controller-runtime logs, with the manager's
// klog text logger at -v=10, when a reconcile of a TalosUpgrade starts.
const reconcilingLine = `I1203 08:42:21.654711   31392 controller.go:477] "Reconciling" controller="talosupgrade" controllerGroup="upgrade.tollgate.dev" controllerKind="TalosUpgrade" TalosUpgrade="soak-r0-c1/r0c1" namespace="soak-r0-c1" name="r0c1" reconcileID="abc"`

// TestRestInvariant: the reconciles of a rollout are counted from the
// controllers' lines, and a rollout at rest for a full window that is
// reconciled more than maxRestReconciles times in it is a violation of
// invariant 10, reported once; one reconciled now and then is not, nor one
// whose reconciles came in a burst as it came to rest.
func TestRestInvariant(t *testing.T) {
	g := NewWithT(t)
	s := &soak{report: &Report{Checks: map[int]int{}}, reconciles: newReconciles()}
	c := &soakCluster{ns: "soak-r0-c1", name: "r0c1", targets: []targetChange{{version: "v1.13.0"}}}
	quiet := &soakCluster{ns: "soak-r0-c2", name: "r0c2", targets: []targetChange{{version: "v1.13.0"}}}
	u := &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}}}
	u.Status.Phase = upgradev1.UpgradePhaseFailed
	g.Expect(atRest(c, u)).To(BeTrue())

	start := time.Now().Add(-time.Minute)
	s.observeRest(c, u, false, start)
	s.observeRest(quiet, u, false, start)
	s.reconciles.line(`I1203 08:42:21.654711   31392 controller.go:477] "Reconciling" controller="talosupgradepolicy" TalosUpgradePolicy="soak-r0-c1/r0c1"`, time.Now())
	s.reconciles.line(`I1203 08:42:21.654711   31392 controller.go:477] "Reconcile successful" controller="talosupgrade" TalosUpgrade="soak-r0-c1/r0c1"`, time.Now())
	g.Expect(s.reconciles.since("soak-r0-c1/r0c1", start, nil)).To(BeZero(), "only the start of a reconcile of a TalosUpgrade counts")
	for range maxRestReconciles + 5 {
		s.reconciles.line(reconcilingLine, time.Now())
	}
	s.reconciles.line(`I1203 08:42:21.654711   31392 controller.go:477] "Reconciling" controller="talosupgrade" TalosUpgrade="soak-r0-c2/r0c2"`, time.Now())

	s.judgeRest(time.Now())
	s.judgeRest(time.Now())
	g.Expect(s.report.Violations).To(HaveLen(1))
	g.Expect(s.report.Violations[0].Invariant).To(Equal(10))
	g.Expect(s.report.Violations[0].Message).To(ContainSubstring("soak-r0-c1/r0c1"))
	g.Expect(s.report.Checks[10]).To(Equal(2))

	// A burst of reconciles as a rollout comes to rest (its cleanup's
	// events) is not judged; the same burst later is.
	burst := &soakCluster{ns: "soak-r0-c3", name: "r0c3", targets: []targetChange{{version: "v1.13.0"}}}
	const burstLine = `I1203 08:42:21.654711   31392 controller.go:477] "Reconciling" controller="talosupgrade" TalosUpgrade="soak-r0-c3/r0c3"`
	rested := time.Now().Add(-restSettle - restWindow)
	s.observeRest(burst, u, false, rested)
	for range maxRestReconciles + 5 {
		s.reconciles.line(burstLine, rested.Add(time.Second))
	}
	s.judgeRest(time.Now())
	g.Expect(s.report.Violations).To(HaveLen(1), "the burst of coming to rest is no violation")
	for range maxRestReconciles + 5 {
		s.reconciles.line(burstLine, time.Now())
	}
	s.judgeRest(time.Now())
	g.Expect(s.report.Violations).To(HaveLen(2))
	g.Expect(s.report.Violations[1].Message).To(ContainSubstring("soak-r0-c3/r0c3"))

	// Reconciles while the management apiserver was cut (failed, and
	// retried with backoff) are not counted.
	cut := &soakCluster{ns: "soak-r0-c4", name: "r0c4", targets: []targetChange{{version: "v1.13.0"}}}
	const cutLine = `I1203 08:42:21.654711   31392 controller.go:477] "Reconciling" controller="talosupgrade" TalosUpgrade="soak-r0-c4/r0c4"`
	s.observeRest(cut, u, false, rested)
	s.managementCuts = []interval{{from: time.Now().Add(-5 * time.Second), to: time.Now().Add(time.Second)}}
	for range maxRestReconciles + 5 {
		s.reconciles.line(cutLine, time.Now())
	}
	s.judgeRest(time.Now())
	g.Expect(s.report.Violations).To(HaveLen(2), "the reconciles of an outage are not counted")
	g.Expect(s.reconciles.since("soak-r0-c4/r0c4", rested, nil)).To(Equal(maxRestReconciles + 5))

	// A rollout whose Cluster CAPI works on is not at rest, nor one that
	// goes back to work.
	s.observeRest(cut, u, true, time.Now())
	g.Expect(s.resting).NotTo(HaveKey("soak-r0-c4/r0c4"))
	u.Status.Phase = upgradev1.UpgradePhaseInProgress
	s.observeRest(c, u, false, time.Now())
	g.Expect(s.resting).NotTo(HaveKey("soak-r0-c1/r0c1"))
}
