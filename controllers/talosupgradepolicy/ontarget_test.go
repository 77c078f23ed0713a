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

package talosupgradepolicy

import (
	"testing"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestOnTarget checks which rollouts go to their policy's current targets
// (the rollouts whose end clears a bypass): the same Talos and Kubernetes
// versions with or without "v", any Talos for a policy with a
// kubernetesVersion alone, no Kubernetes target on both sides, and every
// rollout of a CAPI-driven policy.
func TestOnTarget(t *testing.T) {
	capi := func(spec *upgradev1.TalosUpgradePolicySpec) { spec.TargetFrom = upgradev1.TargetFromCAPI }
	follow := func(spec *upgradev1.TalosUpgradePolicySpec) { spec.Follow = &upgradev1.FollowSpec{} }
	for _, tt := range []struct {
		name string
		// policy and rollout are the Talos and Kubernetes versions of the
		// policy's spec and of the rollout's.
		policy, rollout [2]string
		// from makes the policy take its targets from elsewhere.
		from     func(*upgradev1.TalosUpgradePolicySpec)
		onTarget bool
	}{
		{name: "Talos", policy: [2]string{"v1.13.0", ""}, rollout: [2]string{"v1.13.0", ""}, onTarget: true},
		{name: "Talos without its v", policy: [2]string{"v1.13.0", ""}, rollout: [2]string{"1.13.0", ""}, onTarget: true},
		{name: "Talos, another version", policy: [2]string{"v1.13.0", ""}, rollout: [2]string{"v1.12.4", ""}},
		{name: "Talos, a Kubernetes target the policy does not have", policy: [2]string{"v1.13.0", ""}, rollout: [2]string{"v1.13.0", "v1.36.0"}},
		{name: "Talos and Kubernetes", policy: [2]string{"v1.13.0", "v1.36.0"}, rollout: [2]string{"1.13.0", "v1.36.0"}, onTarget: true},
		{name: "Talos and another Kubernetes", policy: [2]string{"v1.13.0", "v1.36.0"}, rollout: [2]string{"v1.13.0", "v1.35.2"}},
		{name: "Kubernetes alone, any Talos", policy: [2]string{"", "v1.36.0"}, rollout: [2]string{"v1.12.4", "1.36.0"}, onTarget: true},
		{name: "Kubernetes alone, another Kubernetes", policy: [2]string{"", "v1.36.0"}, rollout: [2]string{"v1.12.4", "v1.35.2"}},
		{name: "following releases, none chosen yet", policy: [2]string{"", "v1.36.0"}, from: follow, rollout: [2]string{"v1.13.0", "v1.36.0"}},
		{name: "CAPI decides", from: capi, rollout: [2]string{"v1.13.0", ""}, onTarget: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &upgradev1.TalosUpgradePolicy{}
			p.Spec.TalosVersion, p.Spec.KubernetesVersion = tt.policy[0], tt.policy[1]
			if tt.from != nil {
				tt.from(&p.Spec)
			}
			u := &upgradev1.TalosUpgrade{}
			u.Spec.TalosVersion, u.Spec.KubernetesVersion = tt.rollout[0], tt.rollout[1]
			NewWithT(t).Expect(onTarget(p, u)).To(Equal(tt.onTarget))
		})
	}
}
