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
)

// TestKeepOneClean: round 0 keeps a Cluster without a terminal fault when
// every Cluster drew one (seed 20261211: six Clusters, four scripted faults
// and two drawn), so that the fleet events that need a completed rollout
// play; a round with a Cluster left clean, a later round, and a round with
// no more Clusters than scripted faults are left as drawn.
func TestKeepOneClean(t *testing.T) {
	all := []string{faultUpgradeError, faultRollback, faultNeverComesBack, faultNodeSilent}
	tests := []struct {
		name      string
		terminals []string
		round     int
		want      []string
	}{
		{name: "seed 20261211: all six drew one", terminals: append(append([]string{}, all...), faultUpgradeError, faultRollback),
			want: append(append([]string{}, all...), faultUpgradeError, "")},
		{name: "one clean already", terminals: append(append([]string{}, all...), faultUpgradeError, ""),
			want: append(append([]string{}, all...), faultUpgradeError, "")},
		{name: "a later round", round: 1, terminals: []string{faultRollback, faultRollback}, want: []string{faultRollback, faultRollback}},
		{name: "only the scripted ones", terminals: append([]string{}, all...), want: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(keepOneClean(tt.terminals, tt.round)).To(Equal(tt.want))
		})
	}
}

// TestRoundProgress: a round is bounded by how long it goes without
// progress, not by its length: each new fingerprint starts the count again.
func TestRoundProgress(t *testing.T) {
	g := NewWithT(t)
	p := newProgress()
	p.last = time.Now().Add(-time.Hour)
	g.Expect(p.since("a")).To(BeNumerically("<", time.Minute), "a new fingerprint is progress")
	p.last = time.Now().Add(-time.Hour)
	g.Expect(p.since("a")).To(BeNumerically(">=", time.Hour), "the same fingerprint is no progress")
	g.Expect(p.since("b")).To(BeNumerically("<", time.Minute))
}
