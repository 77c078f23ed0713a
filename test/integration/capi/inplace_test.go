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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// extension is Tollgate's runtime extension as CAPI core reaches it in the
// test world: served by Tollgate's manager on a port of the loopback
// interface, with a certificate CAPI trusts through the ExtensionConfig's
// caBundle.
type extension struct {
	port    int
	certDir string
	ca      []byte
}

// registerExtension makes the serving certificate of Tollgate's extension,
// registers it with CAPI core through an ExtensionConfig that serves the
// namespaces opted in with upgradev1.InPlaceUpdatesNamespaceLabel, as
// config/extension does in a real management cluster, and labels the world's
// namespace. CAPI reads the ExtensionConfig's handlers once Tollgate serves
// them (see served).
func (w *world) registerExtension(ctx context.Context) *extension {
	w.t.Helper()
	g := NewWithT(w.t)
	certs := &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	g.Expect(certs.PrepWithoutInstalling()).To(Succeed())
	w.t.Cleanup(func() { _ = certs.Cleanup() })
	ext := &extension{port: certs.LocalServingPort, certDir: certs.LocalServingCertDir, ca: certs.LocalServingCAData}

	ns := &corev1.Namespace{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Name: w.ns}, ns)).To(Succeed())
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[upgradev1.InPlaceUpdatesNamespaceLabel] = upgradev1.InPlaceUpdatesEnabled
	g.Expect(w.c.Patch(ctx, ns, patch)).To(Succeed())

	g.Expect(w.c.Create(ctx, &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "tollgate"},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig: runtimev1.ClientConfig{URL: fmt.Sprintf("https://127.0.0.1:%d/", ext.port), CABundle: ext.ca},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				upgradev1.InPlaceUpdatesNamespaceLabel: upgradev1.InPlaceUpdatesEnabled,
			}},
		},
	})).To(Succeed())
	return ext
}

// options serves the extension from Tollgate's manager.
func (e *extension) options(o *manager.Options) {
	o.ExtensionPort, o.WebhookCertDir = e.port, e.certDir
	o.ExtensionRetryAfter = time.Second
}

// served waits until CAPI discovered the extension's three in-place
// update handlers.
func (w *world) served(ctx context.Context) {
	w.t.Helper()
	NewWithT(w.t).Eventually(func(g Gomega) {
		ec := &runtimev1.ExtensionConfig{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Name: "tollgate"}, ec)).To(Succeed())
		var names []string
		for _, h := range ec.Status.Handlers {
			names = append(names, h.RequestHook.Hook)
		}
		g.Expect(names).To(ConsistOf("CanUpdateMachineSet", "CanUpdateMachine", "UpdateMachine"), "ExtensionConfig: %v", ec.Status.Conditions)
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

// inPlace makes the MachineDeployment replace no Machine to make room: an
// in-place update takes its Machine down, within maxUnavailable 1.
func inPlace(md *clusterv1.MachineDeployment) {
	md.Spec.Rollout.Strategy = clusterv1.MachineDeploymentRolloutStrategy{
		Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
		RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaxSurge:       ptr.To(intstr.FromInt32(0)),
		},
	}
}

// capiDriven is a policy whose target comes from CAPI.
func capiDriven(p *upgradev1.TalosUpgradePolicy) {
	p.Name = "capi"
	p.Spec.TalosVersion = ""
	p.Spec.TargetFrom = upgradev1.TargetFromCAPI
}

// changeTemplate does what a user does to change the Talos of a
// MachineDeployment's Machines: a new TalosSimMachineTemplate with the new
// image, and the MachineDeployment pointed at it.
func (w *world) changeTemplate(ctx context.Context, image string) {
	w.t.Helper()
	g := NewWithT(w.t)
	name := w.md.Name + "-" + strings.NewReplacer(":", "-", "/", "-", ".", "-").Replace(image[strings.LastIndex(image, ":")+1:])
	g.Expect(w.c.Create(ctx, &infrav1.TalosSimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: infrav1.TalosSimMachineTemplateSpec{Template: infrav1.TalosSimMachineTemplateResource{Spec: infrav1.TalosSimMachineSpec{
			Image: image,
		}}},
	})).To(Succeed())
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.InfrastructureRef.Name = name
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
}

// workerNames returns the names of the MachineDeployments' Machines.
func (w *world) workerNames(ctx context.Context, g Gomega) []string {
	var names []string
	for _, name := range machineNames(ctx, g, w.c, w.ns) {
		if name != w.name+"-cp-0" {
			names = append(names, name)
		}
	}
	return names
}

// describeMachines says where CAPI's Machines are, for a failure message.
func (w *world) describeMachines(ctx context.Context) string {
	list := &clusterv1.MachineList{}
	if err := w.c.List(ctx, list, client.InNamespace(w.ns)); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, m := range list.Items {
		_, updating := m.Annotations[clusterv1.UpdateInProgressAnnotation]
		fmt.Fprintf(&b, "\nMachine %s (updating %t, pending hooks %q):", m.Name, updating, m.Annotations[runtimev1.PendingHooksAnnotation])
		for _, c := range m.Status.Conditions {
			if c.Status != metav1.ConditionTrue || c.Type == clusterv1.MachineUpdatingCondition {
				fmt.Fprintf(&b, " %s=%s %s %q;", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	return b.String()
}

// upgradeCalls counts the install calls node got.
func upgradeCalls(sim *talossim.Simulator, node string) int {
	return sim.Calls(node, talossim.RPCUpgrade) + sim.Calls(node, talossim.RPCLegacyUpgrade)
}

// TestInPlaceUpdateWithCAPICore runs CAPI core with InPlaceUpdates and
// RuntimeSDK, and Tollgate as its in-place update extension: a
// MachineDeployment of 4 workers changes its Talos version in its template,
// and CAPI updates every Machine in place through Tollgate, behind the
// gates of the Cluster's policy. The Machines are the same before and
// after; never more than one is down at once; a failing ClusterHealthCheck
// keeps CAPI's rollout blocked (for 30s) and it resumes when the check
// passes; a hold holds its Machine, and CAPI shows why on the Machine; a
// restart of Tollgate mid-update makes no second install.
func TestInPlaceUpdateWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 4, 2*time.Second, inPlace)
	w.running(ctx, 4, "v1.12.4")
	ext := w.registerExtension(ctx)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())

	// The workload cluster's Jobs: the health check fails while failing.
	var failing atomic.Bool
	failing.Store(true)
	driver := jobdriver.New(w.workload.Client, jobdriver.Options{Delay: 100 * time.Millisecond})
	driver.Script(func(job *batchv1.Job) bool {
		return strings.HasPrefix(job.Name, "tollgate-hc-ceph") && failing.Load()
	}, repeat(jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN"}, 1000)...)
	driverCtx, stopDriver := context.WithCancel(ctx)
	defer stopDriver()
	driver.Start(driverCtx)
	g.Expect(w.c.Create(ctx, &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "ceph"},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "quay.io/ceph/ceph:v19", Command: []string{"ceph", "health"}}},
			}}}},
			Interval: &metav1.Duration{Duration: 5 * time.Second},
			Timeout:  &metav1.Duration{Duration: time.Minute},
		},
	})).To(Succeed())
	w.optIn(ctx, capiDriven, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
	})
	stop := startTollgate(ctx, t, w.mgmt, ext.options)
	defer func() { stop() }()
	w.served(ctx)

	workers := w.workerNames(ctx, g)
	g.Expect(workers).To(HaveLen(4))
	held := workers[0]
	setAnnotation(ctx, g, w.c, w.ns, held, hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "backup"), "snapshot in progress")

	// No rollout yet: nothing asks for another version.
	g.Consistently(func(g Gomega) {
		u := &upgradev1.TalosUpgrade{}
		err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, u)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		if err == nil {
			g.Expect(u.Status.Machines).To(BeEmpty())
		}
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())

	const image = "ghcr.io/siderolabs/installer:v1.13.0"
	w.changeTemplate(ctx, image)
	// kubectl tollgate watch follows CAPI's whole rollout, although the
	// Cluster's rollout is Completed between two Machines CAPI hands over.
	followed := make(chan string, 1)
	go func() {
		wc, err := client.NewWithWatch(w.mgmt.Config, client.Options{Scheme: scheme()})
		if err != nil {
			followed <- err.Error()
			return
		}
		_, _, err = rolloutview.Follow(ctx, wc, rolloutview.FollowOptions{Namespace: w.ns, Cluster: w.name, Machines: true}, rolloutview.NewLive(io.Discard, rolloutview.LiveOptions{}))
		if err != nil {
			followed <- err.Error()
			return
		}
		var versions []string
		for _, node := range workers {
			versions = append(versions, sim.Node(node).Version())
		}
		followed <- strings.Join(versions, ",")
	}()

	// CAPI hands a Machine over, and Tollgate does not touch it while the
	// check fails: CAPI's rollout is blocked, for 30s.
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Spec.TalosVersion).To(Equal("v1.13.0"))
		g.Expect(u.Status.Machines).NotTo(BeEmpty())
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, node := range workers {
			g.Expect(upgradeCalls(sim, node)).To(BeZero(), "node %s is not upgraded while the check fails", node)
		}
		list := &clusterv1.MachineList{}
		g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
		updating := 0
		for i := range list.Items {
			if _, ok := list.Items[i].Annotations[clusterv1.UpdateInProgressAnnotation]; ok {
				updating++
			}
		}
		g.Expect(updating).To(BeNumerically("<=", 1), "CAPI updates one Machine at a time (maxUnavailable 1)")
	}, 30*time.Second, time.Second).Should(Succeed())
	// CAPI shows why on the Machine it updates.
	g.Eventually(func(g Gomega) {
		list := &clusterv1.MachineList{}
		g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
		var messages []string
		for i := range list.Items {
			if c := conditions.Get(&list.Items[i], clusterv1.MachineUpdatingCondition); c != nil && c.Status == metav1.ConditionTrue {
				messages = append(messages, c.Message)
			}
		}
		g.Expect(messages).To(ContainElement(ContainSubstring("In-place update in progress")))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())

	failing.Store(false)

	// The rollout goes on, one Machine at a time, and the held Machine
	// waits for its hold; a restart of Tollgate while a Machine reboots.
	restarted := false
	maxDown := 0
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		down := 0
		for _, r := range u.Status.Machines {
			switch r.Phase {
			case upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseUpgrading, upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseVerifying:
				down++
				if r.Phase == upgradev1.MachinePhaseRebooting && !restarted {
					stop()
					stop = startTollgate(ctx, t, w.mgmt, ext.options)
					restarted = true
				}
			}
			if r.Machine == held && r.Phase != upgradev1.MachinePhasePending && r.Phase != upgradev1.MachinePhaseCompleted {
				g.Expect(r.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold), "Machine %s waits for its hold", held)
				removeAnnotation(ctx, g, w.c, w.ns, held, hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "backup"))
			}
		}
		maxDown = max(maxDown, down)
		g.Expect(down).To(BeNumerically("<=", 1), "one Machine at a time")
		for _, node := range workers {
			g.Expect(sim.Node(node).Version()).To(Equal("v1.13.0"), "node %s; %s", node, w.describeMachines(ctx))
		}
	}, 5*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(restarted).To(BeTrue(), "Tollgate was restarted while a Machine rebooted")

	// CAPI ends every update, and its objects say what runs: the workers
	// run v1.13.0, the control plane, no part of the MachineDeployment, its
	// own version.
	g.Eventually(func(g Gomega) {
		list := &clusterv1.MachineList{}
		g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
		for _, m := range list.Items {
			g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.UpdateInProgressAnnotation), "Machine %s", m.Name)
			want := "v1.13.0"
			if m.Name == w.name+"-cp-0" {
				want = "v1.12.4"
			}
			g.Expect(m.Status.NodeInfo).NotTo(BeNil())
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(want)), "Machine %s", m.Name)
		}
		md := &clusterv1.MachineDeployment{}
		g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
		g.Expect(md.Status.UpToDateReplicas).To(HaveValue(BeEquivalentTo(4)))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	g.Expect(w.workerNames(ctx, g)).To(Equal(workers), "every Machine was updated in place, none replaced")
	for _, node := range workers {
		g.Expect(upgradeCalls(sim, node)).To(Equal(1), "node %s was installed once, the restart notwithstanding", node)
	}
	g.Eventually(followed, time.Minute).Should(Receive(Equal("v1.13.0,v1.13.0,v1.13.0,v1.13.0")), "the watch ended once every worker was updated, not before")
}

// TestInPlaceUpdateFailureIsFinal: a Machine whose node fails its upgrade (it
// boots back into the version it ran)
// ends CAPI's in-place update with InPlaceUpdateFailed, and Tollgate never
// upgrades it again for that version, however often CAPI asks.
func TestInPlaceUpdateFailureIsFinal(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 1, 500*time.Millisecond, inPlace)
	w.running(ctx, 1, "v1.12.4")
	ext := w.registerExtension(ctx)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	workers := w.workerNames(ctx, g)
	g.Expect(workers).To(HaveLen(1))
	sim.Node(workers[0]).InjectFault(talossim.Faults{Rollback: true})
	w.optIn(ctx, capiDriven)
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)

	w.changeTemplate(ctx, "ghcr.io/siderolabs/installer:v1.13.0")
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: workers[0]}, m)).To(Succeed())
		c := conditions.Get(m, clusterv1.MachineUpdatingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(clusterv1.MachineInPlaceUpdateFailedReason), "Updating: %s", c.Message)
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed())
	calls := upgradeCalls(sim, workers[0])
	g.Expect(calls).To(BeNumerically(">=", 1))
	g.Consistently(func() int { return upgradeCalls(sim, workers[0]) }, 20*time.Second, time.Second).Should(Equal(calls),
		"a failed in-place update is not tried again")
	g.Expect(sim.Node(workers[0]).Version()).To(Equal("v1.12.4"))
}

// TestForgedUpdateMachine sends UpdateMachine requests that CAPI did not
// send, straight to Tollgate's extension: for a Machine CAPI is not
// updating, and for a Machine with another image than its InfraMachine
// names. Both are answered Failure and no node is touched: Tollgate acts on
// what the apiserver holds, never on a request.
func TestForgedUpdateMachine(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 1, 200*time.Millisecond, inPlace)
	w.running(ctx, 1, "v1.12.4")
	ext := w.registerExtension(ctx)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	w.optIn(ctx, capiDriven)
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)
	workers := w.workerNames(ctx, g)

	m := &clusterv1.Machine{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: workers[0]}, m)).To(Succeed())
	infra := &infrav1.TalosSimMachine{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: m.Spec.InfrastructureRef.Name}, infra)).To(Succeed())
	infra.Spec.Image = "evil.example/installer:v1.13.0"
	infra.APIVersion, infra.Kind = infrav1.GroupVersion.String(), "TalosSimMachine"
	raw, err := json.Marshal(infra)
	g.Expect(err).NotTo(HaveOccurred())

	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(ext.ca)).To(BeTrue())
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	send := func(m *clusterv1.Machine) *runtimehooksv1.UpdateMachineResponse {
		req := &runtimehooksv1.UpdateMachineRequest{}
		req.APIVersion, req.Kind = runtimehooksv1.GroupVersion.String(), "UpdateMachineRequest"
		req.Desired.Machine = *m
		req.Desired.InfrastructureMachine.Raw = raw
		body, err := json.Marshal(req)
		g.Expect(err).NotTo(HaveOccurred())
		url := fmt.Sprintf("https://127.0.0.1:%d/hooks.runtime.cluster.x-k8s.io/v1alpha1/updatemachine/update-machine", ext.port)
		resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		out := &runtimehooksv1.UpdateMachineResponse{}
		g.Expect(json.NewDecoder(resp.Body).Decode(out)).To(Succeed())
		return out
	}

	// A Machine CAPI is not updating.
	resp := send(m)
	g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusFailure))
	g.Expect(resp.Message).To(ContainSubstring("is not being updated in place by CAPI"))

	// A Machine that carries CAPI's markers: a request for another image
	// than its InfraMachine names is refused.
	setAnnotation(ctx, g, w.c, w.ns, m.Name, clusterv1.UpdateInProgressAnnotation, "")
	setAnnotation(ctx, g, w.c, w.ns, m.Name, runtimev1.PendingHooksAnnotation, "UpdateMachine")
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: workers[0]}, m)).To(Succeed())
	resp = send(m)
	g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusFailure))
	g.Expect(resp.Message).To(ContainSubstring("Tollgate acts on what the apiserver holds"))

	g.Consistently(func() int { return upgradeCalls(sim, workers[0]) + sim.Calls(workers[0], talossim.RPCReboot) }, 5*time.Second, 500*time.Millisecond).Should(BeZero(),
		"no node is touched on a forged request")
	g.Expect(sim.Node(workers[0]).Version()).To(Equal("v1.12.4"))
}

// setAnnotation sets an annotation of Machine name.
func setAnnotation(ctx context.Context, g Gomega, c client.Client, namespace, name, key, value string) {
	m := &clusterv1.Machine{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m)).To(Succeed())
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
	g.Expect(c.Patch(ctx, m, patch)).To(Succeed())
}

// removeAnnotation removes an annotation of Machine name.
func removeAnnotation(ctx context.Context, g Gomega, c client.Client, namespace, name, key string) {
	m := &clusterv1.Machine{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m)).To(Succeed())
	if _, ok := m.Annotations[key]; !ok {
		return
	}
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, key)
	g.Expect(c.Patch(ctx, m, patch)).To(Succeed())
}

// repeat returns n copies of o.
func repeat(o jobdriver.Outcome, n int) []jobdriver.Outcome {
	out := make([]jobdriver.Outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}
