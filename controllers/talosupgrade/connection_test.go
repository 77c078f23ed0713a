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

package talosupgrade_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// connectionUp reads CAPI's ClusterCache gauge for the Cluster of the
// rollout: whether the manager is connected to its workload cluster. A
// Cluster the ClusterCache never connected to, or disconnected from, has no
// series.
func (r *rollout) connectionUp(g Gomega) bool {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "capi_cluster_cache_connection_up" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m, map[string]string{"cluster_name": "alpha", "cluster_namespace": r.ns}) {
				return m.GetGauge().GetValue() == 1
			}
		}
	}
	return false
}

// labelsMatch reports whether the metric carries every label of want.
func labelsMatch(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// hasConnectionAnnotation reports whether the Cluster asks for its workload
// connection.
func (r *rollout) hasConnectionAnnotation(g Gomega) bool {
	c := &clusterv1.Cluster{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "alpha"}, c)).To(Succeed())
	_, ok := c.Annotations[upgradev1.WorkloadConnectionAnnotation]
	return ok
}

// tollgateJobs lists Tollgate's Jobs in the workload cluster.
func (r *rollout) tollgateJobs(g Gomega) []batchv1.Job {
	jobs := &batchv1.JobList{}
	g.Expect(r.workload.Client.List(context.Background(), jobs, client.MatchingLabels{workloadjob.ManagedByLabel: workloadjob.ManagedByValue})).To(Succeed())
	return jobs.Items
}

// TestWorkloadConnectionOnlyWhileNeeded checks that a converged Cluster is
// never connected to, that an admitted rollout is connected while it works,
// and that the connection is closed (and Tollgate's Jobs deleted) once the
// rollout has ended.
func TestWorkloadConnectionOnlyWhileNeeded(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: toVersion})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()

	// Every Machine runs the target: the rollout completes with no
	// connection to the workload cluster, ever.
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(r.hasConnectionAnnotation(g)).To(BeFalse())
		g.Expect(r.connectionUp(g)).To(BeFalse())
	}, 3*time.Second, 100*time.Millisecond).Should(Succeed())

	// A new target: the rollout is admitted and connects while it works.
	r.createCheck(g, "ceph")
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, true)
	g.Eventually(func(g Gomega) {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "to-1-13"}, p)).To(Succeed())
		p.Spec.TalosVersion = patchVersion
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		g.Expect(mgmt.Client.Update(ctx, p)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), "alpha-worker-0").HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
		g.Expect(r.hasConnectionAnnotation(g)).To(BeTrue())
		g.Expect(r.connectionUp(g)).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// Once it has ended, its Jobs are deleted and the connection closed.
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		g.Expect(r.hasConnectionAnnotation(g)).To(BeFalse())
		g.Expect(r.connectionUp(g)).To(BeFalse())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.tollgateJobs(g)).To(BeEmpty(), "Tollgate's Jobs are deleted before the connection is closed")
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(patchVersion))
	}
}
