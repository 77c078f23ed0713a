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

package talosupgrade

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestReleaseRemovesWhatTheCacheMissed: Tollgate set skip-remediation on a
// Machine (again, after a write of its record was lost) and the cache has
// not seen it yet when the Machine is done. The release removes it all the
// same, instead of finding nothing to remove in the cached copy and leaving
// it for ever. (Found by the soak: invariant 4.)
func TestReleaseRemovesWhatTheCacheMissed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	stale := builder.Machine("ns", "m-0", "c")
	current := stale.DeepCopy()
	current.Annotations = map[string]string{clusterv1.MachineSkipRemediationAnnotation: ""}
	c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(current).Build()

	r := &Reconciler{Client: c}
	s := &scope{Rollout: disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{}, Machines: map[string]*clusterv1.Machine{"m-0": stale}}}
	st := &upgradev1.MachineUpgradeStatus{Machine: "m-0", SkipRemediationSet: true}
	g.Expect(r.release(ctx, s, st)).To(Succeed())
	g.Expect(st.SkipRemediationSet).To(BeFalse())

	got := &clusterv1.Machine{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(current), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation))

	// Removing it again, or from a Machine that is gone, is no error.
	g.Expect(r.patchSkipRemediation(ctx, got, false)).To(Succeed())
	g.Expect(c.Delete(ctx, got)).To(Succeed())
	g.Expect(r.patchSkipRemediation(ctx, stale.DeepCopy(), false)).To(Succeed())
}
