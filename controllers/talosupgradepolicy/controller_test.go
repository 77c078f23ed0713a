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

package talosupgradepolicy_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/controllers/talosupgradepolicy"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

var mgmt *envtest.Management

func TestMain(m *testing.M) {
	if envtest.NoteWithoutAssets("the policy controller suite (its tests in package talosupgradepolicy_test need a management apiserver), running the tests that need none") {
		os.Exit(m.Run())
	}
	var err error
	mgmt, err = envtest.StartManagement()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = mgmt.Stop()
	os.Exit(code)
}

// startPolicyController runs the policy controller alone, with options, so
// that the test plays the part of the rollouts.
func startPolicyController(t *testing.T, options controller.Options) {
	t.Helper()
	g := NewWithT(t)
	// As the manager's ServiceAccount, with the RBAC of config/default.
	cfg, err := mgmt.ManagerConfig(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     envtest.NewScheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(manager.UsePriorityQueue)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Add(t.Context(), mgr.GetFieldIndexer())).To(Succeed())
	g.Expect((&talosupgradepolicy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(t.Context(), mgr, options)).To(Succeed())
	mgmt.RunManager(t, mgr)
}

func upgrades(g Gomega, namespace string) map[string]*upgradev1.TalosUpgrade {
	list := &upgradev1.TalosUpgradeList{}
	g.Expect(mgmt.Client.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	out := map[string]*upgradev1.TalosUpgrade{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// TestFleetAdmission creates a TalosUpgrade per selected Cluster, admits
// them within maxClustersInProgress, never admits a paused Cluster, and
// summarises the fleet.
func TestFleetAdmission(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := "fleet-admission"
	for _, name := range []string{"a", "b"} {
		_, err := builder.Create(ctx, mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: name, Policy: "p", ControlPlanes: 1})
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err := builder.Create(ctx, mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: "paused", Policy: "p", ControlPlanes: 1,
		ClusterOptions: []builder.ClusterOption{builder.WithPausedCluster()}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = builder.Create(ctx, mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: "other", ControlPlanes: 1})
	g.Expect(err).NotTo(HaveOccurred())

	policy := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
			Rollout:      upgradev1.RolloutSpec{MaxClustersInProgress: ptr.To(int32(1))},
		}},
	}
	g.Expect(mgmt.Client.Create(ctx, policy)).To(Succeed())
	startPolicyController(t, controller.Options{})

	// One TalosUpgrade per selected Cluster but the paused one, carrying the
	// plan; one admitted.
	g.Eventually(func(g Gomega) {
		us := upgrades(g, ns)
		g.Expect(us).To(HaveLen(2))
		g.Expect(us).NotTo(HaveKey("other"))
		g.Expect(us).NotTo(HaveKey("paused"), "a paused Cluster gets its rollout once unpaused")
		g.Expect(us["a"].Spec.TalosVersion).To(Equal("v1.13.0"))
		g.Expect(us["a"].Spec.ClusterName).To(Equal("a"))
		g.Expect(us["a"].Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
		g.Expect(us["b"].Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// When the first rollout completes, it gives its slot back and the next
	// Cluster gets it; the paused one has none.
	a := upgrades(g, ns)["a"]
	a.Status.Phase = upgradev1.UpgradePhaseCompleted
	a.Status.ObservedGeneration = a.Generation
	g.Expect(mgmt.Client.Status().Update(ctx, a)).To(Succeed())
	g.Eventually(func(g Gomega) {
		us := upgrades(g, ns)
		g.Expect(us["a"].Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation), "a finished rollout gives its slot back")
		g.Expect(us["b"].Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
		g.Expect(us).NotTo(HaveKey("paused"))
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(policy), p)).To(Succeed())
		g.Expect(p.Status.Clusters.Selected).To(BeEquivalentTo(3))
		g.Expect(p.Status.Clusters.Completed).To(BeEquivalentTo(1))
		g.Expect(conditions.GetReason(p, upgradev1.PolicyRolloutCompletedCondition)).To(Equal(upgradev1.RolloutInProgressReason))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// A new target is carried to every TalosUpgrade.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
	policy.Spec.TalosVersion = "v1.13.1"
	g.Expect(mgmt.Client.Update(ctx, policy)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, u := range upgrades(g, ns) {
			g.Expect(u.Spec.TalosVersion).To(Equal("v1.13.1"))
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// envtestOnly skips a test of the suite, saying so and naming
// KUBEBUILDER_ASSETS, when the envtest binaries are not set: the suite's world
// was not started, and the tests of the package that need none still run
// (make test-unit).
func envtestOnly(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}
