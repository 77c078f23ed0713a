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

package capi_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	talosproviders "github.com/tollgate-dev/tollgate/test/providers/talos"
	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

func scheme() *kruntime.Scheme {
	s := envtest.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{infrav1.AddToScheme, runtimev1.AddToScheme, talosproviders.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // Programming error: the schemes are static.
		}
	}
	return s
}

// world is a management cluster running CAPI core and the Talos-simulator
// provider, with one Cluster (fleet/alpha) whose workers are a
// MachineDeployment: the objects a user applies, and what CAPI makes.
type world struct {
	t    *testing.T
	mgmt *envtest.Management
	c    client.Client
	sims *hosts.Simulators

	workload *envtest.Workload

	ns, name string
	md       *clusterv1.MachineDeployment
	// deployments are the MachineDeployments of worldConfig.deployments,
	// as created.
	deployments []*clusterv1.MachineDeployment
}

// startWorld starts the world with a MachineDeployment of workers replicas
// whose nodes reboot in reboot, changed by mutate before it is created; it
// stops when the test ends.
func startWorld(ctx context.Context, t *testing.T, workers int32, reboot time.Duration, mutate ...func(*clusterv1.MachineDeployment)) *world {
	t.Helper()
	return startWorldWith(ctx, t, worldConfig{workers: workers, reboot: reboot, mutate: mutate})
}

// worldConfig says what startWorldWith makes.
type worldConfig struct {
	// workers are the MachineDeployment's replicas; reboot how long a node
	// is down.
	workers int32
	reboot  time.Duration
	// mutate change the MachineDeployment before it is created.
	mutate []func(*clusterv1.MachineDeployment)
	// cloud makes the workers of the cloud family of providers
	// (TalosSimCloudMachineTemplate alpha-md-0, whose opaque image it
	// declares v1.12.4 in its annotation, and whose spec is immutable); the
	// mutable family's TalosSimMachineTemplate otherwise.
	cloud bool
	// workerImage is the workers' image, ghcr.io/siderolabs/installer:v1.12.4
	// when empty.
	workerImage string
	// controlPlaneVersion is the control-plane Machine's Kubernetes version,
	// v1.35.0 when empty.
	controlPlaneVersion string
	// deployments are more MachineDeployments of the Cluster, beside
	// alpha-md-0 (w.md), in w.deployments: each is made as alpha-md-0 is,
	// from its own TalosConfigTemplate and machine template of its name
	// (of the same family, on workerImage), so that a test can move one
	// and hold the other. running and workerNames count their Machines
	// too.
	deployments []deploymentConfig
}

// deploymentConfig is one more MachineDeployment of the world's Cluster.
type deploymentConfig struct {
	// name is the MachineDeployment's name, and its templates'.
	name string
	// replicas are its replicas.
	replicas int32
	// mutate change it before it is created.
	mutate []func(*clusterv1.MachineDeployment)
}

// startWorldWith starts the world of cfg; it stops when the test ends.
func startWorldWith(ctx context.Context, t *testing.T, cfg worldConfig) *world {
	t.Helper()
	g := NewWithT(t)
	if cfg.workerImage == "" {
		cfg.workerImage = "ghcr.io/siderolabs/installer:v1.12.4"
	}
	if cfg.controlPlaneVersion == "" {
		cfg.controlPlaneVersion = "v1.35.0"
	}
	w := &world{t: t, ns: "fleet", name: "alpha"}
	var err error
	w.mgmt, err = managements.Start(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(managements.Release(context.Background(), w.mgmt)).To(Succeed()) })
	var capiArgs []string
	if os.Getenv("CAPI_TEST_LOG") != "" {
		capiArgs = append(capiArgs, "--v=5")
	}
	capi, err := w.mgmt.StartCAPI(envtest.CAPIOptions{Args: capiArgs})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if dir := os.Getenv("CAPI_TEST_LOG"); dir != "" && t.Failed() {
			_ = os.WriteFile(filepath.Join(dir, t.Name()+"-capi.log"), []byte(capi.Output()), 0o600)
		}
		g.Expect(capi.Stop()).To(Succeed())
	})
	w.c, err = client.New(w.mgmt.Config, client.Options{Scheme: scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	workload, err := w.mgmt.StartWorkload(ctx, w.ns, w.name)
	g.Expect(err).NotTo(HaveOccurred())
	w.workload = workload
	w.sims = hosts.NewSimulators(hosts.SimulatorsOptions{Simulator: talossim.Options{RebootDuration: cfg.reboot, Logf: t.Logf}})
	t.Cleanup(func() { _ = w.sims.Close() })
	mgrCtx, stopProvider := context.WithCancel(context.WithoutCancel(ctx))
	providerHooks, err := w.mgmt.ServeWebhooks(infrastructure.WebhookDirectory(), talosproviders.WebhookDirectory())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = providerHooks.Cleanup() })
	mgr, err := ctrl.NewManager(w.mgmt.Config, ctrl.Options{
		Scheme:        scheme(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		Controller:    config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(manager.UsePriorityQueue)},
		WebhookServer: webhook.NewServer(providerHooks.ServerOptions()),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(infrastructure.Setup(mgrCtx, mgr, infrastructure.Options{Hosts: w.sims, Controller: controller.Options{MaxConcurrentReconciles: 2}})).To(Succeed())
	g.Expect(talosproviders.Setup(mgrCtx, mgr, talosproviders.Options{Controller: controller.Options{MaxConcurrentReconciles: 2}})).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(mgrCtx)
	}()
	t.Cleanup(func() {
		stopProvider()
		<-done
	})
	g.Expect(envtest.WaitForWebhookServer(ctx, mgr.GetWebhookServer())).To(Succeed())

	// The Cluster, its infrastructure and the MachineDeployments whose
	// workers get their Talos machine configuration from the Talos
	// bootstrap provider's stand-in, as a user applies them.
	endpoint, err := url.Parse(workload.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(endpoint.Port())
	g.Expect(err).NotTo(HaveOccurred())
	objs := []client.Object{
		&clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimCluster", Name: w.name,
			}},
		},
		&infrav1.TalosSimCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name},
			Spec:       infrav1.TalosSimClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: endpoint.Hostname(), Port: int32(port)}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-bootstrap", Labels: map[string]string{clusterv1.ClusterNameLabel: w.name}},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{"value": []byte("version: v1alpha1\n"), "format": []byte("cloud-config")},
		},
	}
	var workers []client.Object
	w.md, workers = w.workers(cfg, deploymentConfig{name: w.name + "-md-0", replicas: cfg.workers, mutate: cfg.mutate})
	objs = append(objs, workers...)
	for _, d := range cfg.deployments {
		md, more := w.workers(cfg, d)
		w.deployments = append(w.deployments, md)
		objs = append(objs, more...)
	}
	objs = append(objs,
		// One control-plane Machine, made directly as without a control
		// plane provider: CAPI counts the control plane initialized, and
		// runs MachineHealthChecks, once it has a Node.
		&infrav1.TalosSimMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-cp-0"},
			Spec:       infrav1.TalosSimMachineSpec{Image: "ghcr.io/siderolabs/installer:v1.12.4"},
		},
		&clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-cp-0", Labels: map[string]string{clusterv1.MachineControlPlaneLabel: ""}},
			Spec: clusterv1.MachineSpec{
				ClusterName: w.name,
				Version:     cfg.controlPlaneVersion,
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(w.name + "-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimMachine", Name: w.name + "-cp-0",
				},
			},
		},
	)
	for _, obj := range objs {
		g.Expect(w.c.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	}
	return w
}

// workers returns the MachineDeployment of d, changed by d.mutate, and the
// objects to create for it in order: its TalosConfigTemplate and machine
// template (of cfg's family and image, both named as it is), then itself.
func (w *world) workers(cfg worldConfig, d deploymentConfig) (*clusterv1.MachineDeployment, []client.Object) {
	var template client.Object = &infrav1.TalosSimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: d.name},
		Spec: infrav1.TalosSimMachineTemplateSpec{Template: infrav1.TalosSimMachineTemplateResource{Spec: infrav1.TalosSimMachineSpec{
			Image: cfg.workerImage,
		}}},
	}
	templateKind := "TalosSimMachineTemplate"
	if cfg.cloud {
		template = cloudTemplate(w.ns, d.name, cfg.workerImage, "v1.12.4")
		templateKind = "TalosSimCloudMachineTemplate"
	}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: d.name},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: w.name,
			Replicas:    ptr.To(d.replicas),
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{}},
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: w.name,
				Version:     "v1.35.0",
				Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: bootstrapv1.GroupVersion.Group, Kind: "TalosConfigTemplate", Name: d.name,
				}},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: templateKind, Name: template.GetName(),
				},
			}},
		},
	}
	for _, m := range d.mutate {
		m(md)
	}
	return md, []client.Object{
		&bootstrapv1.TalosConfigTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: d.name},
			Spec: bootstrapv1.TalosConfigTemplateSpec{Template: bootstrapv1.TalosConfigTemplateResource{Spec: bootstrapv1.TalosConfigSpec{
				GenerateType: "worker", TalosVersion: "v1.12",
			}}},
		},
		template, md,
	}
}

// running waits until the MachineDeployments have replicas Machines in all
// and every Machine (the control plane's too) is Running with its Node on
// version, as CAPI reports them.
func (w *world) running(ctx context.Context, replicas int, version string) {
	w.t.Helper()
	NewWithT(w.t).Eventually(func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(w.c.List(ctx, machines, client.InNamespace(w.ns))).To(Succeed())
		g.Expect(machines.Items).To(HaveLen(replicas + 1))
		for _, m := range machines.Items {
			g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has its Node", m.Name)
			g.Expect(m.Status.NodeInfo).NotTo(BeNil())
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(version)), "Machine %s runs %s", m.Name, version)
			g.Expect(m.Status.Addresses).NotTo(BeEmpty())
			g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
		}
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
}

// optIn writes the Cluster's talosconfig, creates a policy to v1.13.0 (one
// worker at a time) and labels the Cluster with it.
func (w *world) optIn(ctx context.Context, mutate ...func(*upgradev1.TalosUpgradePolicy)) {
	w.t.Helper()
	g := NewWithT(w.t)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	talosconfig, err := sim.TalosConfigSecret(w.ns, w.name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.c.Create(ctx, talosconfig)).To(Succeed())
	one := intstr.FromInt32(1)
	policy := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "to-1-13"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "ghcr.io/siderolabs/installer"},
			Rollout:      upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: &one}},
		}},
	}
	for _, m := range mutate {
		m(policy)
	}
	g.Expect(w.c.Create(ctx, policy)).To(Succeed())
	cluster := &clusterv1.Cluster{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, cluster)).To(Succeed())
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Labels = map[string]string{upgradev1.PolicyLabel: policy.Name}
	g.Expect(w.c.Patch(ctx, cluster, patch)).To(Succeed())
}

// upgrade reads the Cluster's TalosUpgrade.
func (w *world) upgrade(ctx context.Context, g Gomega) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, u)).To(Succeed())
	return u
}

// TestMachineDeploymentWithCAPICore runs CAPI core and the Talos-simulator
// provider: a MachineDeployment's Machines are created by CAPI's
// MachineDeployment and MachineSet controllers, booted by the provider on
// the Talos version of their template's image, and CAPI's Machine
// controller finds each Machine's Node by its providerID and copies its
// nodeRef, nodeInfo and addresses into the Machine: what the Tollgate tests
// wrote by hand so far. A scale-up boots a new machine on the template's
// version. Then Tollgate's manager, as installed, rolls a Talos upgrade over
// those Machines: CAPI reports the new version in every Machine's nodeInfo
// and no Machine is replaced.
func TestMachineDeploymentWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 2, 200*time.Millisecond)
	w.running(ctx, 2, "v1.12.4")

	// A scale-up is replicas on the MachineDeployment.
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](3)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
	w.running(ctx, 3, "v1.12.4")
	before := machineNames(ctx, g, w.c, w.ns)

	w.optIn(ctx)
	defer startTollgate(ctx, t, w.mgmt)()
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %v", u.Status.Phase, u.Status.Conditions)
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	w.running(ctx, 3, "v1.13.0")
	g.Expect(machineNames(ctx, g, w.c, w.ns)).To(Equal(before), "the Machines were upgraded in place, none replaced")

	// The MachineDeployment's template still boots v1.12.4: Tollgate says
	// so, and what to change, and changes nothing itself.
	g.Eventually(func(g Gomega) {
		c := conditions.Get(w.upgrade(ctx, g), upgradev1.TemplatesOnTargetCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("MachineDeployment alpha-md-0 creates Machines from TalosSimMachineTemplate alpha-md-0, which boots v1.12.4"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	g.Expect(md.Spec.Template.Spec.InfrastructureRef.Name).To(Equal("alpha-md-0"))
	w.changeTemplate(ctx, "ghcr.io/siderolabs/installer:v1.13.0")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(w.upgrade(ctx, g), upgradev1.TemplatesOnTargetCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "TemplatesOnTarget: %s", c.Message)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestRemediationWithCAPICore runs a real MachineHealthCheck that remediates
// a Machine whose Node is not Ready for 2s, during a rollout whose reboots
// take 5s: a Machine rebooting under Tollgate is not remediated (Tollgate
// marks it with cluster.x-k8s.io/skip-remediation), and a Machine whose node
// never comes back is remediated, by CAPI, once Tollgate has failed it and
// let it go.
func TestRemediationWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 3, 5*time.Second)
	w.running(ctx, 3, "v1.12.4")
	g.Expect(w.c.Create(ctx, &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-md-0"},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: w.name,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: w.md.Name}},
			Checks: clusterv1.MachineHealthCheckChecks{UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr.To[int32](2)},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To[int32](2)},
			}},
		},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		mhc := &clusterv1.MachineHealthCheck{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name + "-md-0"}, mhc)).To(Succeed())
		g.Expect(mhc.Status.ExpectedMachines).To(HaveValue(BeEquivalentTo(3)))
		g.Expect(mhc.Status.CurrentHealthy).To(HaveValue(BeEquivalentTo(3)))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	machines := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, machines, client.InNamespace(w.ns))).To(Succeed())
	uids := map[string]string{}
	for _, m := range machines.Items {
		uids[m.Name] = string(m.UID)
	}
	var lost string
	for _, m := range machines.Items {
		if m.Labels[clusterv1.MachineDeploymentNameLabel] != "" {
			lost = m.Name
			break
		}
	}
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	sim.Node(lost).InjectFault(talossim.Faults{NeverComesBack: true})

	w.optIn(ctx, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
	})
	defer startTollgate(ctx, t, w.mgmt)()

	// Until the lost Machine is gone, Tollgate must have failed it first;
	// no other Machine is ever remediated.
	failed := false
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		for _, r := range u.Status.Machines {
			if r.Machine == lost && r.Phase == upgradev1.MachinePhaseFailed {
				failed = true
			}
		}
		present := map[string]string{}
		list := &clusterv1.MachineList{}
		g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
		for _, m := range list.Items {
			present[m.Name] = string(m.UID)
		}
		for name, uid := range uids {
			if name != lost {
				g.Expect(present).To(HaveKeyWithValue(name, uid), "Machine %s, disrupted by Tollgate, was never remediated", name)
			}
		}
		_, stays := present[lost]
		if !stays {
			g.Expect(failed).To(BeTrue(), "the MachineHealthCheck remediated Machine %s before Tollgate gave up on it", lost)
		}
		g.Expect(stays).To(BeFalse(), "the MachineHealthCheck remediates Machine %s once Tollgate failed it", lost)
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
}

// machineNames returns the names of the Machines of namespace, sorted.
func machineNames(ctx context.Context, g Gomega, c client.Client, namespace string) []string {
	machines := &clusterv1.MachineList{}
	g.Expect(c.List(ctx, machines, client.InNamespace(namespace))).To(Succeed())
	names := make([]string, 0, len(machines.Items))
	for _, m := range machines.Items {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// startTollgate runs Tollgate's production manager (cmd/manager) as its
// ServiceAccount, with the RBAC of config/default, changed by mutate, and
// returns what stops it (before the control plane); envtest's RunManager
// fails the test on a request that RBAC forbids. Installer images are
// taken as present: no registry serves them here.
func startTollgate(ctx context.Context, t *testing.T, mgmt *envtest.Management, mutate ...func(*manager.Options)) (stop func()) {
	t.Helper()
	g := NewWithT(t)
	cfg, err := mgmt.ManagerConfig(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	o := manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		TalosAPIPort: talossim.DefaultPort, SkipControllerNameValidation: true, TalosCallTimeout: 3 * time.Second,
		CheckImage: func(context.Context, string, *corev1.Secret) error { return nil },
	}
	for _, m := range mutate {
		m(&o)
	}
	mgr, err := manager.New(mgrCtx, cfg, o)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(cancel)
	stopManager := mgmt.RunManager(t, mgr)
	return func() {
		stopManager()
		cancel()
	}
}
