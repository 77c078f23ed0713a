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
	"context"
	"fmt"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// capiBusy says what CAPI still does in the Clusters, "" when nothing: a
// MachineDeployment whose Machines are not all up to date (unless it rolls
// out OnDelete) and available (a scale or a template change under way), a Machine being deleted or
// without its Node yet, a worker waiting for its remediation, or not yet
// judged healthy by its MachineHealthCheck.
func (s *soak) capiBusy(ctx context.Context, clusters []*soakCluster) string {
	mgmt := s.world.mgmt.Client
	for _, c := range clusters {
		md := &clusterv1.MachineDeployment{}
		key := client.ObjectKey{Namespace: c.ns, Name: sandbox.WorkersName(c.name)}
		if err := mgmt.Get(ctx, key, md); err != nil {
			return fmt.Sprintf("reading MachineDeployment %s: %v", key, err)
		}
		want := ptr.Deref(md.Spec.Replicas, 0)
		// An OnDelete MachineDeployment whose template changed (a
		// Kubernetes target's version) keeps its Machines until they are
		// deleted: CAPI does nothing more with them, and counts them out of
		// date for good, as it judges a Machine by its MachineSet's
		// template, not by its own spec.version, which Tollgate sets.
		upToDate := ptr.Deref(md.Status.UpToDateReplicas, -1)
		if md.Spec.Rollout.Strategy.Type == clusterv1.OnDeleteMachineDeploymentStrategyType {
			upToDate = want
		}
		if md.Status.ObservedGeneration != md.Generation || ptr.Deref(md.Status.Replicas, -1) != want ||
			upToDate != want || ptr.Deref(md.Status.AvailableReplicas, -1) != want {
			return fmt.Sprintf("MachineDeployment %s: generation %d observed %d, replicas %d wanted, %d, %d up to date, %d available",
				key, md.Generation, md.Status.ObservedGeneration, want, ptr.Deref(md.Status.Replicas, -1),
				ptr.Deref(md.Status.UpToDateReplicas, -1), ptr.Deref(md.Status.AvailableReplicas, -1))
		}
		machines := &clusterv1.MachineList{}
		if err := mgmt.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
			return fmt.Sprintf("listing the Machines of %s: %v", c.ns, err)
		}
		workers := int32(0)
		for i := range machines.Items {
			m := &machines.Items[i]
			switch {
			case !m.DeletionTimestamp.IsZero():
				return fmt.Sprintf("Machine %s/%s is being deleted", c.ns, m.Name)
			case m.Status.NodeRef.Name == "":
				return fmt.Sprintf("Machine %s/%s has no Node yet (phase %s)", c.ns, m.Name, m.Status.Phase)
			case specUnobserved(m):
				return fmt.Sprintf("CAPI has not observed generation %d of Machine %s/%s yet", m.Generation, c.ns, m.Name)
			case workerOf(c, m) && !conditions.IsTrue(m, clusterv1.MachineHealthCheckSucceededCondition):
				// The MachineHealthCheck reconciles at most every 15s (its
				// rate limit), and later after a lost connection to the
				// workload cluster: it writes its verdict on a new Machine,
				// or one Tollgate let go of, when it next does.
				return fmt.Sprintf("MachineHealthCheck of %s has not judged Machine %s healthy yet", c.ns, m.Name)
			}
			if workerOf(c, m) {
				workers++
			}
		}
		mhc := &clusterv1.MachineHealthCheck{}
		if err := mgmt.Get(ctx, key, mhc); err != nil {
			return fmt.Sprintf("reading MachineHealthCheck %s: %v", key, err)
		}
		if mhc.Status.ObservedGeneration != mhc.Generation || ptr.Deref(mhc.Status.ExpectedMachines, -1) != workers || ptr.Deref(mhc.Status.CurrentHealthy, -1) != workers {
			return fmt.Sprintf("MachineHealthCheck %s: %d of %d Machines healthy, %d workers", key,
				ptr.Deref(mhc.Status.CurrentHealthy, -1), ptr.Deref(mhc.Status.ExpectedMachines, -1), workers)
		}
		left, err := s.unremediated(ctx, c)
		if err != nil {
			return err.Error()
		}
		if len(left) > 0 {
			return "waiting for the remediation of " + left[0]
		}
	}
	return ""
}

// capiWorking reports whether CAPI works on the Cluster's Machines, as
// listed: one is being deleted, has no Node yet, has a spec CAPI has not
// observed yet (specUnobserved), or is a worker its MachineHealthCheck has
// not judged healthy (yet, or any more).
func capiWorking(c *soakCluster, machines *clusterv1.MachineList) bool {
	for i := range machines.Items {
		m := &machines.Items[i]
		if !m.DeletionTimestamp.IsZero() || m.Status.NodeRef.Name == "" || specUnobserved(m) ||
			workerOf(c, m) && !conditions.IsTrue(m, clusterv1.MachineHealthCheckSucceededCondition) {
			return true
		}
	}
	return false
}

// specUnobserved reports whether a condition of m was written for an older
// generation of it: CAPI has yet to observe its spec (Tollgate sets a
// Machine's spec.version once its kubelet runs the version, and the
// MachineHealthCheck, rate-limited, writes its condition's observedGeneration
// up to 15s later).
func specUnobserved(m *clusterv1.Machine) bool {
	for _, c := range m.Status.Conditions {
		if c.ObservedGeneration > 0 && c.ObservedGeneration < m.Generation {
			return true
		}
	}
	return false
}
