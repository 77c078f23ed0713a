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
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

func labelled(obj client.Object, labels map[string]string) client.Object {
	obj.SetLabels(labels)
	return obj
}

// TestReadFleet groups Clusters and rollouts under their policies, a
// policy that does not exist included, shows a Cluster's unfinished
// TalosUpgrade over an older one, and reads the holds of its Machines.
func TestReadFleet(t *testing.T) {
	g := NewWithT(t)
	s, err := scheme()
	g.Expect(err).NotTo(HaveOccurred())
	old := metav1.NewTime(time.Now().Add(-time.Hour))
	held := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a-cp-0",
		Labels:      map[string]string{clusterv1.ClusterNameLabel: "a"},
		Annotations: map[string]string{hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "backup-operator"): ""}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "p1"}},
		&upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "p1"}},
		labelled(&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a"}}, map[string]string{upgradev1.PolicyLabel: "p1"}),
		labelled(&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "b"}}, map[string]string{upgradev1.PolicyLabel: "p-missing"}),
		&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "unlabelled"}},
		&upgradev1.TalosUpgrade{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a-old", CreationTimestamp: old},
			Spec:       upgradev1.TalosUpgradeSpec{ClusterName: "a", PolicyName: "p1"},
			Status:     upgradev1.TalosUpgradeStatus{Phase: upgradev1.UpgradePhaseCompleted},
		},
		&upgradev1.TalosUpgrade{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a"},
			Spec:       upgradev1.TalosUpgradeSpec{ClusterName: "a", PolicyName: "p1"},
			Status:     upgradev1.TalosUpgradeStatus{Phase: upgradev1.UpgradePhaseInProgress},
		},
		held,
	).Build()
	ctx := context.Background()

	f, err := readFleet(ctx, c, "fleet", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Policies).To(HaveLen(2))
	missing, p1 := f.Policies[0], f.Policies[1]
	g.Expect(missing.Name).To(Equal("p-missing"))
	g.Expect(missing.Policy).To(BeNil(), "shown as NotFound")
	g.Expect(missing.Rollouts).To(HaveLen(1))
	g.Expect(missing.Rollouts[0].Cluster).To(Equal("b"))
	g.Expect(missing.Rollouts[0].Upgrade).To(BeNil())
	g.Expect(p1.Policy).NotTo(BeNil())
	g.Expect(p1.Rollouts).To(HaveLen(1))
	g.Expect(p1.Rollouts[0].Upgrade.Name).To(Equal("a"), "the unfinished rollout, not the older one")
	g.Expect(p1.Rollouts[0].Holds).To(Equal(map[string][]rolloutview.Hold{"a-cp-0": {{Point: upgradev1.HoldPointPreDrain, Owner: "backup-operator"}}}))

	f, err = readFleet(ctx, c, "", "p1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Policies).To(HaveLen(2), "p1 of both namespaces")
	g.Expect([]string{f.Policies[0].Namespace, f.Policies[1].Namespace}).To(Equal([]string{"fleet", "other"}))

	_, err = readFleet(ctx, c, "fleet", "nope")
	g.Expect(err).To(MatchError(ContainSubstring(`no TalosUpgradePolicy "nope" in namespace "fleet"`)))
}
