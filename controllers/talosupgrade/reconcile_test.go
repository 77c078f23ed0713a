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
	"errors"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// workloadCache is a ClusterCache connected to one workload client.
type workloadCache struct {
	clustercache.ClusterCache
	workload client.Client
}

func (c workloadCache) GetClient(context.Context, client.ObjectKey) (client.Client, error) {
	return c.workload, nil
}

// noDialer fails the test on any Talos call: the reconciles tested here
// must stop before they reach a node.
type noDialer struct{ t *testing.T }

func (d noDialer) Dial(context.Context, *clusterv1.Cluster, *clusterv1.Machine) (talos.Client, error) {
	d.t.Errorf("a Talos API call was made")
	return nil, errors.New("no Talos API in this test")
}

var errInjected = errors.New("injected failure")

// TestReconcileStopsAtTheFirstFailedPhase reconciles an admitted rollout
// whose preflight passed, with one failed or missing read each: no Machine
// may start and no node be called.
func TestReconcileStopsAtTheFirstFailedPhase(t *testing.T) {
	tests := []struct {
		name string
		// failGet fails the Get of objects of this type.
		failGet client.Object
		// withoutCheck leaves the referenced ClusterHealthCheck out.
		withoutCheck bool
		wantErr      bool
		wantBlocked  string
	}{
		{name: "failed read of the Cluster", failGet: &clusterv1.Cluster{}, wantErr: true},
		{name: "failed read of the policy", failGet: &upgradev1.TalosUpgradePolicy{}, wantErr: true},
		{name: "failed read of a health check", failGet: &upgradev1.ClusterHealthCheck{}, wantErr: true},
		{name: "missing health check", withoutCheck: true, wantBlocked: `ClusterHealthCheck "ceph" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			cluster := builder.Cluster("ns", "alpha", builder.WithPolicy("to-1-13"))
			cp := builder.Machine("ns", "alpha-cp-0", "alpha", builder.WithControlPlane(), builder.WithAddress("127.0.0.2"))
			policy := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "to-1-13"}}
			objs := []client.Object{cluster, cp, policy}
			if !tt.withoutCheck {
				objs = append(objs, &upgradev1.ClusterHealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ceph"}})
			}
			mgmtClient := indexed(fake.NewClientBuilder().WithScheme(envtest.NewScheme())).WithObjects(objs...).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tt.failGet != nil && sameType(obj, tt.failGet) {
						return apierrors.NewInternalError(errInjected)
					}
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			workload := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(builder.Node("alpha-cp-0")).Build()
			u := &upgradev1.TalosUpgrade{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha", Annotations: map[string]string{upgradev1.AdmittedAnnotation: "true"}},
				Spec: upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "to-1-13", UpgradePlan: upgradev1.UpgradePlan{
					TalosVersion: "v1.13.0", HealthChecks: []upgradev1.HealthCheckRef{{Name: "ceph"}},
				}},
			}
			conditions.Set(u, metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionTrue, Reason: upgradev1.PreflightPassedReason})
			u.Status.PreflightTarget = disruption.PreflightTarget(u)
			r := &Reconciler{Client: mgmtClient, ClusterCache: workloadCache{workload: workload}, Dialer: noDialer{t}, Recorder: events.NewFakeRecorder(100), Now: time.Now}
			s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: time.Now()}, base: u.DeepCopy()}

			_, err := r.reconcileNormal(ctx, s)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring(errInjected.Error())))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			for _, st := range u.Status.Machines {
				g.Expect(st.Phase).To(Equal(upgradev1.MachinePhasePending), "Machine %s started", st.Machine)
			}
			r.updateStatus(s)
			g.Expect(u.Status.BlockedBy).To(ContainSubstring(tt.wantBlocked))
		})
	}
}

func sameType(a, b client.Object) bool {
	switch a.(type) {
	case *clusterv1.Cluster:
		_, ok := b.(*clusterv1.Cluster)
		return ok
	case *upgradev1.TalosUpgradePolicy:
		_, ok := b.(*upgradev1.TalosUpgradePolicy)
		return ok
	case *upgradev1.ClusterHealthCheck:
		_, ok := b.(*upgradev1.ClusterHealthCheck)
		return ok
	}
	return false
}

// indexed registers the manager's field indexes with a fake client, as
// cmd/manager does with the cache.
func indexed(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, i := range index.Indexes {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	return b
}

// TestReadUpgrade checks which rollouts are read from the cache: only those
// at rest, which no reconcile can take a step on; every other one is read
// live.
func TestReadUpgrade(t *testing.T) {
	atRest := func(u *upgradev1.TalosUpgrade) {
		u.Generation, u.Status.ObservedGeneration = 2, 2
		u.Status.Phase = upgradev1.UpgradePhaseCompleted
		u.Status.Machines = []upgradev1.MachineUpgradeStatus{{Machine: "alpha-cp-0", Phase: upgradev1.MachinePhaseCompleted}}
	}
	tests := []struct {
		name       string
		mutate     func(u *upgradev1.TalosUpgrade, c *clusterv1.Cluster)
		wantCached bool
	}{
		{name: "finished, nothing in flight", mutate: func(*upgradev1.TalosUpgrade, *clusterv1.Cluster) {}, wantCached: true},
		{name: "admitted", mutate: func(u *upgradev1.TalosUpgrade, _ *clusterv1.Cluster) {
			u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
		}},
		{name: "a new generation not observed yet", mutate: func(u *upgradev1.TalosUpgrade, _ *clusterv1.Cluster) { u.Generation = 3 }},
		{name: "a Machine still cordoned", mutate: func(u *upgradev1.TalosUpgrade, _ *clusterv1.Cluster) { u.Status.Machines[0].Cordoned = true }},
		{name: "a joiner to upgrade", mutate: func(u *upgradev1.TalosUpgrade, _ *clusterv1.Cluster) {
			u.Status.Machines = append(u.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: "alpha-worker-1", Phase: upgradev1.MachinePhasePending})
		}},
		{name: "a workload connection to give back", mutate: func(_ *upgradev1.TalosUpgrade, c *clusterv1.Cluster) {
			c.Annotations = map[string]string{upgradev1.WorkloadConnectionAnnotation: "alpha"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}, Spec: upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "p"}}
			atRest(u)
			cluster := builder.Cluster("ns", "alpha")
			tt.mutate(u, cluster)
			cache := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(cluster).Build()
			g.Expect(cache.Create(context.Background(), u)).To(Succeed())
			live := 0
			apiReader := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(u.DeepCopy()).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					live++
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			r := &Reconciler{Client: cache, APIReader: apiReader}
			got, err := r.readUpgrade(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(u)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).NotTo(BeNil())
			if tt.wantCached {
				g.Expect(live).To(BeZero(), "a rollout at rest is read from the cache")
			} else {
				g.Expect(live).To(Equal(1), "a rollout that may act is read live")
			}
		})
	}
}

// TestFailureOutlivesItsMachine: a MachineHealthCheck remediates the Machine
// Tollgate failed and let go of. The rollout the failure policy paused must
// still count the failure and say why it paused; a record of the Machine
// deleted before it started is dropped (found by the soak with CAPI core,
// seed 424242).
func TestFailureOutlivesItsMachine(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := builder.Cluster("ns", "alpha", builder.WithPolicy("p"))
	kept := builder.Machine("ns", "alpha-md-1", "alpha")
	mgmtClient := indexed(fake.NewClientBuilder().WithScheme(envtest.NewScheme())).WithObjects(cluster, kept).Build()
	u := &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"},
		Spec: upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "p", Paused: true, UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0", FailurePolicy: upgradev1.FailurePolicySpec{Action: upgradev1.FailureActionPause},
		}},
	}
	u.Status.Machines = []upgradev1.MachineUpgradeStatus{
		{Machine: "alpha-md-0", Node: "alpha-md-0", TargetVersion: "v1.13.0", FromVersion: "v1.12.4", Phase: upgradev1.MachinePhaseFailed,
			Message: `node "alpha-md-0" did not come back within rebootTimeout 30s`, SkipRemediationSet: true},
		{Machine: "alpha-md-2", TargetVersion: "v1.13.0", FromVersion: "v1.12.4", Phase: upgradev1.MachinePhasePending},
		{Machine: "alpha-md-1", TargetVersion: "v1.13.0", FromVersion: "v1.12.4", Phase: upgradev1.MachinePhasePending},
	}
	r := &Reconciler{Client: mgmtClient, Recorder: events.NewFakeRecorder(100), Now: time.Now}
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: time.Now(), Cluster: cluster}, base: u.DeepCopy()}

	_, err := r.reconcileMachines(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	names := []string{}
	for _, st := range u.Status.Machines {
		names = append(names, st.Machine)
	}
	g.Expect(names).To(ConsistOf("alpha-md-0", "alpha-md-1"), "the failed Machine's record stays; the one gone before it started goes")
	failedRecord := u.Status.Machines[slices.IndexFunc(u.Status.Machines, func(st upgradev1.MachineUpgradeStatus) bool { return st.Machine == "alpha-md-0" })]
	g.Expect(failedRecord.Phase).To(Equal(upgradev1.MachinePhaseFailed))
	g.Expect(failedRecord.SkipRemediationSet).To(BeFalse(), "nothing is left to undo on a Machine that is gone")
	g.Expect(failedRecord.Message).To(HaveSuffix("; the Machine has since been deleted"))
	g.Expect(s.Failures()).To(BeEquivalentTo(1))
	g.Expect(s.FailureMessage()).To(ContainSubstring(`Machine "alpha-md-0" failed: node "alpha-md-0" did not come back`))

	// Reconciled again, the note is not repeated.
	_, err = r.reconcileMachines(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.FailureMessage()).To(HaveSuffix(`within rebootTimeout 30s; the Machine has since been deleted`))
}
