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

package main

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		arg     string
		want    target
		wantErr string
	}{
		{arg: "prod-eu-1", want: target{name: "prod-eu-1"}},
		{arg: "cluster/prod-eu-1", want: target{name: "prod-eu-1"}},
		{arg: "policy/talos-1-13", want: target{policy: true, name: "talos-1-13"}},
		{arg: "TalosUpgradePolicy/talos-1-13", want: target{policy: true, name: "talos-1-13"}},
		{arg: "policy/", wantErr: "is not a target"},
		{arg: "a/b/c", wantErr: "is not a target"},
		{arg: "machine/cp-0", wantErr: `unknown kind "machine"`},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseTarget(tt.arg)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestBypassApply adds the flags' gates to the bypass already there, with
// the new reason, and leaves requestedBy to the webhook.
func TestBypassApply(t *testing.T) {
	g := NewWithT(t)
	old := &upgradev1.BypassSpec{
		HealthChecks: true, HoldOwners: []string{"backup-operator"},
		Machines: []upgradev1.MachineBypass{{Machine: "cp-0", Hook: "noout", Action: upgradev1.HookBypassRetry}},
		Reason:   "INC-1", RequestedBy: "alice",
	}
	b := &bypassOptions{
		reason: "INC-2", maintenanceWindows: true, holdOwners: []string{"backup-operator", "storage"},
		retry: []string{"w-0/noout"}, skip: []string{"cp-0/noout"},
	}
	g.Expect(b.validate(target{name: "prod"})).To(Succeed())
	got := b.apply(old)
	g.Expect(got).To(Equal(&upgradev1.BypassSpec{
		HealthChecks: true, MaintenanceWindows: true, HoldOwners: []string{"backup-operator", "storage"},
		Machines: []upgradev1.MachineBypass{
			{Machine: "cp-0", Hook: "noout", Action: upgradev1.HookBypassSkip},
			{Machine: "w-0", Hook: "noout", Action: upgradev1.HookBypassRetry},
		},
		Reason: "INC-2", RequestedBy: "alice",
	}))
	g.Expect(old.Machines[0].Action).To(Equal(upgradev1.HookBypassRetry), "the object read is not changed in place")
	g.Expect((&bypassOptions{clear: true}).apply(old)).To(BeNil())
}

// TestUsageErrors exits 2, before connecting to anything, for a command
// line that is wrong.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"},
		{"watch"},
		{"describe", "a", "b"},
		{"pause", "--no-such-flag", "x"},
		{"bypass", "prod"},
		{"bypass", "prod", "--health-checks"},
		{"version", "extra"},
	} {
		g := NewWithT(t)
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"--kubeconfig", "/nonexistent"}, args...), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		g.Expect(code).To(Equal(2), "%v: %s", args, errOut.String())
		g.Expect(errOut.String()).To(MatchRegexp(`^error: .*\nSee 'kubectl tollgate.* --help'\.\n$`), "%v", args)
	}
}

func TestVersion(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(run(context.Background(), []string{"version"}, genericiooptions.IOStreams{Out: &out, ErrOut: &out})).To(Equal(0))
	g.Expect(out.String()).To(Equal("kubectl-tollgate dev\n"))
}
