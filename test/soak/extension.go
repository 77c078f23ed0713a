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
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
)

// Template changes of the workers of an extension Cluster, as counted in
// the report: one Tollgate claims (CAPI hands the Machines over, Tollgate
// updates them in place) and one it does not (CAPI replaces the Machines
// through the removal gate).
const (
	extensionClaimable   = "extension-template-claimable"
	extensionUnclaimable = "extension-template-unclaimable"
	// extensionHandovers counts the Machines the observer saw handed over,
	// and extensionFailedCalls those it saw InPlaceUpdateFailed while
	// Tollgate's record of them was not Failed: CAPI says so after an
	// UpdateMachine call that failed (Tollgate answered Failure because it
	// could not read the apiserver, or the call did not reach a replica),
	// and calls again.
	extensionHandovers   = "extension-machine-handed-over"
	extensionFailedCalls = "extension-update-call-failed"
)

// handoverInvariant is the number of the invariant that no Machine is left
// handed over and unfinished.
const handoverInvariant = 18

// updateMachineHook is the hook CAPI lists in a Machine's pending hooks
// annotation while it waits on the in-place update extension.
const updateMachineHook = "UpdateMachine"

// extensionDiscoveryTimeout bounds how long the soak waits for CAPI to
// discover the extension's handlers.
const extensionDiscoveryTimeout = 2 * time.Minute

// extensionServer is Tollgate's in-place update extension as CAPI core
// reaches it in the soak: every replica serves it on a port of its own,
// with one certificate, behind a relay that forwards each connection to the
// first replica that accepts it, as a Service in front of a Deployment's
// Pods does. A killed replica's connections drop; CAPI retries its call.
type extensionServer struct {
	// ports are the replicas' extension ports, by replica name.
	ports map[string]int
	// certs holds the serving certificate (LocalServingCertDir) and its CA.
	certs *crenvtest.WebhookInstallOptions
	lis   net.Listener
	wg    sync.WaitGroup
}

// startExtensionServer makes the serving certificate, a port per replica
// and the relay.
func startExtensionServer(replicas []string) (_ *extensionServer, err error) {
	e := &extensionServer{ports: map[string]int{}, certs: &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if err := e.certs.PrepWithoutInstalling(); err != nil {
		return nil, fmt.Errorf("making the extension's serving certificate: %w", err)
	}
	for _, r := range replicas {
		if e.ports[r], err = envtest.FreePort(); err != nil {
			return nil, err
		}
	}
	if e.lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("listening for the extension's relay: %w", err)
	}
	e.wg.Go(e.serve)
	return e, nil
}

// serve relays every connection to the first replica that accepts it.
func (e *extensionServer) serve() {
	for {
		in, err := e.lis.Accept()
		if err != nil {
			return
		}
		e.wg.Go(func() {
			defer func() { _ = in.Close() }()
			out := e.dial()
			if out == nil {
				return
			}
			defer func() { _ = out.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
			<-done
		})
	}
}

func (e *extensionServer) dial() net.Conn {
	names := make([]string, 0, len(e.ports))
	for name := range e.ports {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(e.ports[name])), time.Second); err == nil {
			return c
		}
	}
	return nil
}

func (e *extensionServer) stop() {
	if e.lis != nil {
		_ = e.lis.Close()
	}
	if e.certs != nil {
		_ = e.certs.Cleanup()
	}
}

// args are the manager flags that serve the extension on replica's port.
func (e *extensionServer) args(replica string) []string {
	return []string{fmt.Sprintf("--extension-port=%d", e.ports[replica]), "--webhook-cert-dir=" + e.certs.LocalServingCertDir}
}

// register creates the ExtensionConfig a user applies (config/extension:
// the namespaces labelled upgradev1.InPlaceUpdatesNamespaceLabel), pointing
// at the relay, and waits until CAPI discovered its handlers.
func (e *extensionServer) register(ctx context.Context, mgmt client.Client) error {
	ec := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: sandbox.ExtensionName},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig: runtimev1.ClientConfig{URL: "https://" + e.lis.Addr().String() + "/", CABundle: e.certs.LocalServingCAData},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				upgradev1.InPlaceUpdatesNamespaceLabel: upgradev1.InPlaceUpdatesEnabled,
			}},
		},
	}
	if err := mgmt.Create(ctx, ec); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ExtensionConfig %s: %w", sandbox.ExtensionName, err)
	}
	deadline := time.Now().Add(extensionDiscoveryTimeout)
	for {
		err := mgmt.Get(ctx, client.ObjectKey{Name: sandbox.ExtensionName}, ec)
		if err == nil && len(ec.Status.Handlers) >= 3 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CAPI did not discover the handlers of ExtensionConfig %s within %s: %w (conditions %v)",
				sandbox.ExtensionName, extensionDiscoveryTimeout, err, ec.Status.Conditions)
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// extensionClusters picks, by the seed, the Clusters of a round whose
// namespace opts in to the extension: among those whose MachineDeployment
// rolls out RollingUpdate (not Kubernetes-capable) and whose rollout can
// complete (no terminal fault), ExtensionPercent of them, and in round 0 two
// at least where there are two (scriptExtension gives the first a change
// Tollgate claims and the second one it does not). Without ExtensionPercent
// none, and the seed's draws are those of a soak without the extension. A
// round with no candidate says so: its invariant 18 has nothing handed over
// to judge (seed 20261208 with six Clusters: the first four of round 0 take
// the four terminal faults, the fifth drew one, and the clean one is
// Kubernetes-capable).
func (s *soak) extensionClusters(round int, terminals []string, perm []int, kube []bool) []bool {
	ext := make([]bool, s.cfg.Clusters)
	if s.cfg.ExtensionPercent <= 0 {
		return ext
	}
	var candidates []int
	for i := range s.cfg.Clusters {
		if !kube[i] && terminals[perm[i]] == "" {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		s.cfg.Logf("Round %d: no Cluster can opt in to the in-place update extension (each has a terminal fault or is Kubernetes-capable); run more Clusters (--clusters) to exercise it", round)
		return ext
	}
	var picked []int
	for _, i := range candidates {
		if ext[i] = s.rng.IntN(100) < s.cfg.ExtensionPercent; ext[i] {
			picked = append(picked, i)
		}
	}
	if round == 0 {
		for len(picked) < min(2, len(candidates)) {
			rest := slices.DeleteFunc(slices.Clone(candidates), func(i int) bool { return ext[i] })
			i := rest[s.rng.IntN(len(rest))]
			ext[i] = true
			picked = append(picked, i)
		}
	}
	return ext
}

// scriptExtension makes sure every extension Cluster has its template
// changed mid-round (the machinedeployment-template-rollout event, which
// playFleet plays on it with changeExtensionTemplate), and picks the
// change: in round 0 the first extension Cluster gets one Tollgate claims,
// the second one it does not, and so on; later, by the seed.
func (s *soak) scriptExtension(clusters []*soakCluster, events []fleetEvent, round int) []fleetEvent {
	n := 0
	for _, c := range clusters {
		if !c.extension {
			continue
		}
		c.claimable = s.rng.IntN(2) == 0
		if round == 0 {
			c.claimable = n%2 == 0
		}
		n++
		if c.scripted(faultMDRollout) {
			continue
		}
		c.fleet = append(c.fleet, faultMDRollout)
		events = append(events, fleetEvent{
			c: c, kind: faultMDRollout, rng: rand.New(rand.NewPCG(s.rng.Uint64(), 0xe47)), //nolint:gosec // Reproducible chaos.
			after: 2*time.Second + time.Duration(s.rng.Int64N(int64(10*time.Second))),
		})
	}
	return events
}

// changeExtensionTemplate changes the workers' template of an extension
// Cluster, as a user's Git change does, with a change Tollgate claims (the
// mutable family's image bumped to the installer of the policy's
// repository at the policy's target: CAPI hands the Machines over and
// Tollgate updates them in place) or one it does not (an opaque image whose
// template declares no Talos version: CAPI replaces the Machines through
// the removal gate), as scriptExtension picked. Both boot the target.
func (s *soak) changeExtensionTemplate(ctx context.Context, c *soakCluster) error {
	version := c.target()
	if c.claimable {
		template, err := c.cluster.SetWorkersTalosVersion(ctx, version)
		if err != nil {
			return err
		}
		s.count(extensionClaimable, 1)
		s.cfg.Logf("Fleet: MachineDeployment %s/%s now makes its Machines from TalosSimMachineTemplate %s (the policy's installer at %s): Tollgate claims the change, CAPI hands its workers over",
			c.ns, sandbox.WorkersName(c.name), template, version)
		return nil
	}
	mgmt := s.world.mgmt.Client
	template := &infrav1.TalosSimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: sandbox.WorkersName(c.name) + "-opaque-" + strings.ReplaceAll(version, ".", "-")},
		Spec: infrav1.TalosSimMachineTemplateSpec{Template: infrav1.TalosSimMachineTemplateResource{Spec: infrav1.TalosSimMachineSpec{
			Image: hosts.CloudImageID(s.world.sb.InstallerRepository() + ":" + version),
		}}},
	}
	if err := mgmt.Create(ctx, template); err != nil {
		return fmt.Errorf("creating TalosSimMachineTemplate %s/%s: %w", template.Namespace, template.Name, err)
	}
	md := &clusterv1.MachineDeployment{}
	key := client.ObjectKey{Namespace: c.ns, Name: sandbox.WorkersName(c.name)}
	if err := mgmt.Get(ctx, key, md); err != nil {
		return fmt.Errorf("reading MachineDeployment %s: %w", key, err)
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.InfrastructureRef.Name = template.Name
	if err := mgmt.Patch(ctx, md, patch); err != nil {
		return fmt.Errorf("pointing MachineDeployment %s at TalosSimMachineTemplate %s: %w", key, template.Name, err)
	}
	s.count(extensionUnclaimable, 1)
	s.cfg.Logf("Fleet: MachineDeployment %s now makes its Machines from TalosSimMachineTemplate %s (an opaque image of %s nothing declares): Tollgate does not claim it, CAPI replaces its workers",
		key, template.Name, version)
	return nil
}

// handedOver says whether CAPI handed the Machine over to the in-place
// update extension and has not taken it back: it carries CAPI's
// update-in-progress or pending-acknowledge-move annotation, UpdateMachine
// among its pending hooks, or an Updating condition that is True.
func handedOver(m *clusterv1.Machine) bool {
	_, updating := m.Annotations[clusterv1.UpdateInProgressAnnotation]
	_, moving := m.Annotations[clusterv1.PendingAcknowledgeMoveAnnotation]
	return updating || moving || pendingUpdateMachine(m) || conditions.IsTrue(m, clusterv1.MachineUpdatingCondition)
}

func pendingUpdateMachine(m *clusterv1.Machine) bool {
	return slices.Contains(strings.Split(m.Annotations[runtimev1.PendingHooksAnnotation], ","), updateMachineHook)
}

// failedInPlace returns the message of the Machine's failed in-place
// update, if it failed.
func failedInPlace(m *clusterv1.Machine) (string, bool) {
	c := conditions.Get(m, clusterv1.MachineUpdatingCondition)
	if c == nil || c.Reason != clusterv1.MachineInPlaceUpdateFailedReason {
		return "", false
	}
	return c.Message, true
}

// handoverLeft judges a Machine of a Cluster at rest (invariant 18): a
// Machine still handed over, or whose in-place update failed, is a
// violation unless Tollgate's record of it failed (invariant 4 checks that
// its message names the fault). It returns what is wrong, or "".
func handoverLeft(m *clusterv1.Machine, record *upgradev1.MachineUpgradeStatus) string {
	if record != nil && record.Phase == upgradev1.MachinePhaseFailed {
		return ""
	}
	var marks []string
	if _, ok := m.Annotations[clusterv1.UpdateInProgressAnnotation]; ok {
		marks = append(marks, "annotation "+clusterv1.UpdateInProgressAnnotation)
	}
	if _, ok := m.Annotations[clusterv1.PendingAcknowledgeMoveAnnotation]; ok {
		marks = append(marks, "annotation "+clusterv1.PendingAcknowledgeMoveAnnotation)
	}
	if pendingUpdateMachine(m) {
		marks = append(marks, fmt.Sprintf("pending hook %s (%s)", updateMachineHook, runtimev1.PendingHooksAnnotation))
	}
	if c := conditions.Get(m, clusterv1.MachineUpdatingCondition); c != nil && c.Status == metav1.ConditionTrue {
		marks = append(marks, fmt.Sprintf("condition %s True (%s: %s)", clusterv1.MachineUpdatingCondition, c.Reason, c.Message))
	}
	if msg, ok := failedInPlace(m); ok {
		marks = append(marks, fmt.Sprintf("in-place update failed (%s) while Tollgate's record is not Failed: %s", clusterv1.MachineInPlaceUpdateFailedReason, msg))
	}
	if len(marks) == 0 {
		return ""
	}
	phase := "no record"
	if record != nil {
		phase = "record " + string(record.Phase)
	}
	return fmt.Sprintf("Machine %s is left handed over and unfinished (%s): %s", m.Name, phase, strings.Join(marks, "; "))
}

// moveLeft judges a MachineSet at rest (invariant 18): CAPI's acknowledged
// move annotation goes once the moved Machines are acknowledged; left, its
// MachineDeployment still waits on a move.
func moveLeft(ms *clusterv1.MachineSet) string {
	if v, ok := ms.Annotations[clusterv1.AcknowledgedMoveAnnotation]; ok {
		return fmt.Sprintf("MachineSet %s still waits on Machines moved for an in-place update (%s=%q)", ms.Name, clusterv1.AcknowledgedMoveAnnotation, v)
	}
	return ""
}

// noteHandovers checks invariant 18 as the observer samples: it counts the
// Machines CAPI hands over, and a Machine handed over in a Cluster whose
// namespace does not opt in to the extension is a violation at once. A
// Machine seen InPlaceUpdateFailed while Tollgate's record of it is not
// Failed is counted: CAPI says so after one failed UpdateMachine call and
// calls again (seed 7: Tollgate answered Failure while the management
// apiserver was cut), so only one left so at rest is a violation
// (judgeHandovers).
func (o *observer) noteHandovers(c *soakCluster, machines *clusterv1.MachineList, u *upgradev1.TalosUpgrade) {
	if o.handedOver == nil {
		o.handedOver = map[string]bool{}
	}
	records := map[string]upgradev1.MachineUpgradeStatus{}
	if u != nil {
		for _, st := range u.Status.Machines {
			records[st.Machine] = st
		}
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		key := c.ns + "/" + m.Name
		if handedOver(m) && !o.handedOver[key] {
			o.handedOver[key] = true
			o.s.count(extensionHandovers, 1)
			o.s.check(handoverInvariant)
			if !c.extension {
				o.s.violation(handoverInvariant, "%s: Machine %s handed over to an in-place update although its namespace does not opt in to the extension", c.ns, m.Name)
			}
		}
		msg, failed := failedInPlace(m)
		if st, ok := records[m.Name]; failed && (!ok || st.Phase != upgradev1.MachinePhaseFailed) && !o.failedReported[key] {
			if o.failedReported == nil {
				o.failedReported = map[string]bool{}
			}
			o.failedReported[key] = true
			o.s.count(extensionFailedCalls, 1)
			o.s.cfg.Logf("CAPI: Machine %s/%s %s while Tollgate's record of it is not Failed (CAPI calls UpdateMachine again): %s", c.ns, m.Name, clusterv1.MachineInPlaceUpdateFailedReason, msg)
		}
	}
}

// judgeHandovers checks invariant 18 at rest: no Machine of the round is
// left handed over and unfinished, and no MachineSet waits on a move.
func (s *soak) judgeHandovers(ctx context.Context, clusters []*soakCluster) {
	mgmt := s.world.mgmt.Client
	for _, c := range clusters {
		u := &upgradev1.TalosUpgrade{}
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil && !apierrors.IsNotFound(err) {
			s.violation(handoverInvariant, "%s: reading the TalosUpgrade: %v", c.ns, err)
			continue
		}
		records := map[string]*upgradev1.MachineUpgradeStatus{}
		for i := range u.Status.Machines {
			records[u.Status.Machines[i].Machine] = &u.Status.Machines[i]
		}
		machines := &clusterv1.MachineList{}
		sets := &clusterv1.MachineSetList{}
		if err := errors.Join(mgmt.List(ctx, machines, client.InNamespace(c.ns)), mgmt.List(ctx, sets, client.InNamespace(c.ns))); err != nil {
			s.violation(handoverInvariant, "%s: listing the Machines and MachineSets: %v", c.ns, err)
			continue
		}
		for i := range machines.Items {
			s.check(handoverInvariant)
			if msg := handoverLeft(&machines.Items[i], records[machines.Items[i].Name]); msg != "" {
				s.violation(handoverInvariant, "%s: %s", c.ns, msg)
			}
		}
		for i := range sets.Items {
			if msg := moveLeft(&sets.Items[i]); msg != "" {
				s.violation(handoverInvariant, "%s: %s", c.ns, msg)
			}
		}
	}
}
