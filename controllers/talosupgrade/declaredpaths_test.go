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
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// TestRecheckDeclaredPaths: a path is kept while its object declares its
// version; a path not found is looked for again preflightRetry after it was
// planned (forgotten, so that the preflight plans it), and the reconcile
// comes back for it; the path of a version no object declares any more is
// forgotten.
func TestRecheckDeclaredPaths(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	worker := func(name, md string) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{clusterv1.MachineDeploymentNameLabel: md}}}
		m.Status.NodeInfo = &corev1.NodeSystemInfo{OSImage: "Talos (v1.10.3)", KubeletVersion: "v1.33.3"}
		return m
	}
	declares := func(name, version string) clusterv1.MachineDeployment {
		md := clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		md.Spec.Template.Annotations = map[string]string{upgradev1.DesiredTalosVersionAnnotation: version}
		return md
	}
	path := func(md, version string, planned time.Time, hops ...string) upgradev1.DeclaredPathStatus {
		p := upgradev1.DeclaredPathStatus{Kind: disruption.KindMachineDeployment, Name: md, TalosVersion: version, From: "v1.10.3", Hops: hops, PlanTime: metav1.NewTime(planned)}
		if len(hops) == 0 {
			p.Message = "no stable 1.11 release"
		}
		return p
	}
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
	u.Spec.UpgradePath = upgradev1.UpgradePathAuto
	u.Status.DeclaredPaths = []upgradev1.DeclaredPathStatus{
		path("md-planned", "v1.13.0", now.Add(-time.Hour), "v1.11.5", "v1.12.6", "v1.13.0"),
		path("md-failed-now", "v1.13.0", now.Add(-10*time.Second)),
		path("md-failed-long-ago", "v1.13.0", now.Add(-time.Minute)),
		path("md-changed", "v1.12.6", now.Add(-time.Hour), "v1.11.5", "v1.12.6"),
		path("md-gone", "v1.13.0", now.Add(-time.Hour), "v1.11.5", "v1.12.6", "v1.13.0"),
	}
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: now, Machines: map[string]*clusterv1.Machine{}}}
	for _, md := range []string{"md-planned", "md-failed-now", "md-failed-long-ago", "md-changed"} {
		s.Machines[md+"-0"] = worker(md+"-0", md)
	}
	s.Declared = disruption.DeclaredBy(nil, nil, []clusterv1.MachineDeployment{
		declares("md-planned", "v1.13.0"), declares("md-failed-now", "v1.13.0"), declares("md-failed-long-ago", "v1.13.0"), declares("md-changed", "v1.13.0"),
	})
	r := &Reconciler{Now: func() time.Time { return now }}

	res, err := r.recheckDeclaredPaths(context.Background(), s)
	g.Expect(err).NotTo(HaveOccurred())
	var kept []string
	for _, p := range u.Status.DeclaredPaths {
		kept = append(kept, p.Name)
	}
	g.Expect(kept).To(Equal([]string{"md-planned", "md-failed-now"}))
	g.Expect(res.RequeueAfter).To(Equal(time.Second), "the preflight plans md-failed-long-ago's path again")
	g.Expect(s.PathsToPlan()).To(ConsistOf(
		HaveField("Owner.Name", "md-failed-long-ago"), HaveField("Owner.Name", "md-changed")))
}
