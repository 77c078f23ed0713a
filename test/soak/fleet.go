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
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Living-fleet event kinds: the fleet changes under the rollout, through
// Cluster API as users and CAPI's own controllers change it.
const (
	faultScaleUp      = "machinedeployment-scale-up"
	faultScaleDown    = "machinedeployment-scale-down"
	faultMHCRemediate = "node-dies-mhc-remediates"
	faultMDRollout    = "machinedeployment-template-rollout"
	faultLeavePolicy  = "cluster-leaves-and-rejoins-policy"
	faultNewTarget    = "new-target-after-completion"
	// faultDeclareVersion writes the policy's current target in the
	// workers' MachineDeployment's spec.template.metadata
	// (upgradev1.DesiredTalosVersionAnnotation) mid-rollout, and takes it
	// off again half the time: its Machines go to the declared version,
	// whatever target the policy names next (declared.go).
	faultDeclareVersion = "machinedeployment-declares-version"
)

// fleetFaults are scripted per Cluster and played by the fleet loop; the
// reboots asked for (reboot.go) are among them.
var fleetFaults = slices.Concat([]string{faultScaleUp, faultScaleDown, faultMHCRemediate, faultMDRollout, faultLeavePolicy, faultKubernetesTarget, faultNewTarget, faultRollingReboot, faultMachineReboot, faultDeclareVersion}, configFaults)

// completing are the fleet events played only on Clusters without a
// terminal fault, whose rollout can complete: a stopped rollout reboots
// and configures nothing.
var completing = slices.Concat([]string{faultKubernetesTarget, faultNewTarget, faultRollingReboot, faultMachineReboot}, configFaults)

// eligible reports whether an event of kind may be scripted on c: one of
// completing only without a terminal fault; a Kubernetes target only on a
// Kubernetes-capable Cluster, and a template rollout only on the others
// (it needs RollingUpdate). On a Cluster with both a Kubernetes target
// and a new target scripted, the Kubernetes target brings the next Talos
// target, or sets it once its own rollout completed (see
// kubernetesTarget).
func eligible(c *soakCluster, kind string) bool {
	switch {
	case c.terminal != "" && slices.Contains(completing, kind):
		return false
	case kind == faultKubernetesTarget:
		return c.kubernetes
	case kind == faultMDRollout:
		return !c.kubernetes
	case kind == faultDeclareVersion:
		// A rollout that moves Kubernetes takes no declared version (its
		// Machines would wait for ever), nor does a CAPI-driven one.
		return !c.kubernetes && !c.extension
	}
	return true
}

// errPlayedWithKubernetes is a new target played by the Kubernetes target
// of its Cluster, which brings it or sets it after its own rollout.
var errPlayedWithKubernetes = errors.New("played with the Kubernetes target")

// fleetEvent is one living-fleet event scripted for a Cluster.
type fleetEvent struct {
	c    *soakCluster
	kind string
	// rng makes the event's choices; each event has its own, seeded from
	// the soak's, so that the events can run at once.
	rng *rand.Rand
	// after is the delay from the start of the rollouts.
	after time.Duration
	// others are the other Clusters a new target may go to when the
	// rollout of c does not complete (a fault injected on it fails a
	// Machine: a lost answer to a legacy upgrade call, an injected
	// timeout).
	others []*soakCluster
}

// scriptFleet scripts the living-fleet events of a round: in round 0 every
// kind once, on a random Cluster; later, each kind on each Cluster with
// FleetFaultPercent chance (a third of it for a refused configuration
// change). A new target is only set, a reboot only asked for and the
// control plane's patches only changed on Clusters without a terminal
// fault, whose rollout can complete (a stopped rollout reboots nothing).
func (s *soak) scriptFleet(clusters []*soakCluster, round int) []fleetEvent {
	var events []fleetEvent
	for _, kind := range fleetFaults {
		var candidates []*soakCluster
		for _, c := range clusters {
			if eligible(c, kind) {
				candidates = append(candidates, c)
			}
		}
		if len(candidates) == 0 {
			continue
		}
		var picked []*soakCluster
		if round == 0 {
			picked = append(picked, candidates[s.rng.IntN(len(candidates))])
		} else {
			percent := s.cfg.FleetFaultPercent
			if kind == faultConfigRefused {
				percent /= 3
			}
			for _, c := range candidates {
				if s.rng.IntN(100) < percent {
					picked = append(picked, c)
				}
			}
		}
		for _, c := range picked {
			c.fleet = append(c.fleet, kind)
			events = append(events, fleetEvent{
				c: c, kind: kind, rng: rand.New(rand.NewPCG(s.rng.Uint64(), 0xf1ee7)), //nolint:gosec // Reproducible chaos.
				after:  2*time.Second + time.Duration(s.rng.Int64N(int64(10*time.Second))),
				others: slices.DeleteFunc(slices.Clone(candidates), func(o *soakCluster) bool { return o == c }),
			})
		}
	}
	return events
}

// fleet plays the scripted events, each on its own goroutine, and returns
// when they are over.
func (s *soak) fleet(ctx context.Context, events []fleetEvent) {
	var wg sync.WaitGroup
	for _, e := range events {
		wg.Go(func() {
			if !sleep(ctx, e.after) {
				return
			}
			err := s.playFleet(ctx, e)
			if errors.Is(err, errPlayedWithKubernetes) {
				return // Counted by the Kubernetes target.
			}
			if err != nil {
				s.cfg.Logf("Fleet event %s on %s/%s: %v", e.kind, e.c.ns, e.c.name, err)
				return
			}
			s.count(e.kind, 1)
		})
	}
	wg.Wait()
}

func (s *soak) playFleet(ctx context.Context, e fleetEvent) error {
	c := e.c
	switch e.kind {
	case faultScaleUp:
		return s.scaleWorkers(ctx, c, 1)
	case faultScaleDown:
		// By one or two: two removals of one group at once, which the
		// removal gate releases one at a time, within the budget.
		return s.scaleWorkers(ctx, c, -1-e.rng.Int32N(2))
	case faultMHCRemediate:
		return s.killWorker(ctx, c, e.rng)
	case faultMDRollout:
		if c.extension {
			return s.changeExtensionTemplate(ctx, c)
		}
		version := c.from
		if e.rng.IntN(2) == 0 {
			version = c.target()
		}
		template, err := c.cluster.SetWorkersTalosVersion(ctx, version)
		if err != nil {
			return err
		}
		s.cfg.Logf("Fleet: MachineDeployment %s/%s now makes its Machines from TalosSimMachineTemplate %s, which boots %s: CAPI replaces its workers",
			c.ns, sandbox.WorkersName(c.name), template, version)
		return nil
	case faultLeavePolicy:
		return s.leaveAndRejoin(ctx, c, e.rng)
	case faultRollingReboot:
		return s.askRollingReboot(ctx, c, e.rng)
	case faultMachineReboot:
		return s.askMachineReboot(ctx, c, e.rng)
	case faultConfigNoReboot, faultConfigReboot, faultConfigRefused:
		return s.changeConfig(ctx, c, e.kind, e.rng)
	case faultDeclareVersion:
		return s.declareVersion(ctx, c, e.rng)
	case faultNewTarget:
		if c.scripted(faultKubernetesTarget) {
			return errPlayedWithKubernetes
		}
		return s.targetOrOthers(e, func(c *soakCluster) error { return s.newTarget(ctx, c) })
	case faultKubernetesTarget:
		return s.targetOrOthers(e, func(c *soakCluster) error { return s.kubernetesTarget(ctx, c, e.rng) })
	}
	return fmt.Errorf("unknown fleet event %q", e.kind)
}

// targetOrOthers sets a new target with set on the event's Cluster, or,
// when its rollout did not complete, on one of the others: a new Talos
// target to a Cluster without a Kubernetes target scripted or given, a
// Kubernetes target to one without any new target scripted or given (two
// events never set targets on one Cluster at once).
func (s *soak) targetOrOthers(e fleetEvent, set func(*soakCluster) error) error {
	err := set(e.c)
	for _, o := range e.others {
		if !errors.Is(err, errNotCompleted) {
			break
		}
		if !o.claimTarget(e.kind) {
			continue
		}
		s.cfg.Logf("Fleet: %v; the %s goes to %s/%s instead", err, e.kind, o.ns, o.name)
		err = set(o)
	}
	return err
}

// claimTarget claims the Cluster for a new target of kind set for another
// Cluster's event; false when it may not take it (see targetOrOthers).
func (c *soakCluster) claimTarget(kind string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	kubernetes := slices.Contains(c.fleet, faultKubernetesTarget) || c.targetClaimed == faultKubernetesTarget
	if kind == faultKubernetesTarget && (kubernetes || slices.Contains(c.fleet, faultNewTarget) || c.targetClaimed != "") ||
		kind != faultKubernetesTarget && kubernetes {
		return false
	}
	c.targetClaimed = kind
	return true
}

// scaleWorkers changes the replicas of the Cluster's MachineDeployment by
// delta, as a user does: CAPI's MachineSet controller makes a Machine,
// which boots the version of the MachineDeployment's template, or picks
// one to delete and drains it; never below one replica.
func (s *soak) scaleWorkers(ctx context.Context, c *soakCluster, delta int32) error {
	mgmt := s.world.mgmt.Client
	md := &clusterv1.MachineDeployment{}
	key := client.ObjectKey{Namespace: c.ns, Name: sandbox.WorkersName(c.name)}
	if err := mgmt.Get(ctx, key, md); err != nil {
		return fmt.Errorf("reading MachineDeployment %s: %w", key, err)
	}
	replicas := max(ptr.Deref(md.Spec.Replicas, 0)+delta, 1)
	if replicas == ptr.Deref(md.Spec.Replicas, 0) {
		return fmt.Errorf("MachineDeployment %s has %d replicas: no scale-down below one", key, replicas)
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To(replicas)
	if err := mgmt.Patch(ctx, md, patch); err != nil {
		return fmt.Errorf("scaling MachineDeployment %s to %d: %w", key, replicas, err)
	}
	s.cfg.Logf("Fleet: MachineDeployment %s scaled to %d replicas", key, replicas)
	return nil
}

// killWorker kills the node of a worker Machine that Tollgate is not
// disrupting (no skip-remediation), other than the terminal fault's: its
// Talos API goes silent for good and its Node NotReady, and it never comes
// back. The Cluster's MachineHealthCheck then remediates the Machine (its
// MachineSet deletes it and makes another); killWorker waits until it is
// gone, for remediationTimeout.
func (s *soak) killWorker(ctx context.Context, c *soakCluster, rng *rand.Rand) error {
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return err
	}
	var candidates []*clusterv1.Machine
	for i := range machines.Items {
		m := &machines.Items[i]
		_, skip := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]
		_, killed := c.killedAt(m.Status.NodeRef.Name)
		if !workerOf(c, m) || skip || killed || !m.DeletionTimestamp.IsZero() || m.Status.NodeRef.Name == "" ||
			m.Status.NodeRef.Name == c.terminalNode || c.sim.Node(m.Status.NodeRef.Name) == nil {
			continue
		}
		candidates = append(candidates, m)
	}
	if len(candidates) == 0 {
		return errors.New("no worker Machine to kill")
	}
	m := candidates[rng.IntN(len(candidates))]
	node := m.Status.NodeRef.Name
	n := c.sim.Node(node)
	if n == nil {
		return fmt.Errorf("the node of worker Machine %s/%s is gone", c.ns, m.Name)
	}
	n.InjectFault(talossim.Faults{HangRPCs: []string{talossim.AllRPCs}})
	killed := time.Now()
	c.mu.Lock()
	c.killed[node] = killed
	c.mu.Unlock()
	s.noteTransient(c, node, faultMHCRemediate)
	if err := (&talossim.KubeNodeUpdater{Client: c.wl.Client}).NodeRebooting(ctx, node); err != nil {
		return fmt.Errorf("marking the Node of Machine %s/%s NotReady: %w", c.ns, m.Name, err)
	}
	s.cfg.Logf("Fleet: the node of worker Machine %s/%s died and never comes back: its MachineHealthCheck should remediate it", c.ns, m.Name)
	for sleep(ctx, time.Second) {
		if at, gone := c.isGone(m.Name); gone {
			s.cfg.Logf("Fleet: Machine %s/%s remediated %s after its node died; CAPI makes another", c.ns, m.Name, at.Sub(killed).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(killed) > remediationTimeout {
			// Invariant 11 judges it at the end of the round.
			return fmt.Errorf("machine %s/%s not remediated %s after its node died", c.ns, m.Name, remediationTimeout)
		}
	}
	return ctx.Err()
}

// workerOf reports whether m is a worker of the Cluster's MachineDeployment,
// the Machines its MachineHealthCheck watches.
func workerOf(c *soakCluster, m *clusterv1.Machine) bool {
	return m.Labels[clusterv1.MachineDeploymentNameLabel] == sandbox.WorkersName(c.name)
}

// leaveAndRejoin removes the Cluster's policy label, and puts it back 4 to
// 8s later.
func (s *soak) leaveAndRejoin(ctx context.Context, c *soakCluster, rng *rand.Rand) error {
	if err := c.cluster.OptOut(ctx); err != nil {
		return err
	}
	left := time.Now()
	c.mu.Lock()
	c.detached = append(c.detached, interval{from: left})
	c.mu.Unlock()
	d := 4*time.Second + time.Duration(rng.Int64N(int64(4*time.Second)))
	s.cfg.Logf("Fleet: Cluster %s/%s left its policy, for %s", c.ns, c.name, d.Round(time.Millisecond))
	sleep(ctx, d)
	c.mu.Lock()
	c.detached[len(c.detached)-1].to = time.Now()
	c.mu.Unlock()
	s.cfg.Logf("Fleet: Cluster %s/%s re-joins its policy", c.ns, c.name)
	return c.cluster.OptIn(context.WithoutCancel(ctx), policyName)
}

// errNotCompleted is a rollout that ended otherwise than Completed: no new
// target follows it.
var errNotCompleted = errors.New("no new target after a rollout that did not complete")

// newTarget waits for the Cluster's rollout to complete, then sets the next
// version as the policy's target; errNotCompleted when it ends otherwise.
func (s *soak) newTarget(ctx context.Context, c *soakCluster) error {
	mgmt := s.world.mgmt.Client
	for {
		u := &upgradev1.TalosUpgrade{}
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && over(u) {
			if u.Status.Phase != upgradev1.UpgradePhaseCompleted {
				return fmt.Errorf("%w: the rollout of %s/%s ended %s", errNotCompleted, c.ns, c.name, u.Status.Phase)
			}
			break
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
	next := nextVersion(c.target())
	if next == "" {
		return fmt.Errorf("no version after %s", c.target())
	}
	p := &upgradev1.TalosUpgradePolicy{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: policyName}, p); err != nil {
		return err
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.TalosVersion = next
	c.mu.Lock()
	c.targets = append(c.targets, targetChange{version: next, at: time.Now()})
	c.mu.Unlock()
	s.cfg.Logf("Fleet: rollout of %s/%s completed; new target %s", c.ns, c.name, next)
	if err := mgmt.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("setting target %s on TalosUpgradePolicy %s/%s: %w", next, c.ns, policyName, err)
	}
	return nil
}

// silence watches the terminal node of a Cluster scripted with
// faultNodeSilent and, once its drain began, makes its Talos API silent for
// good and its Node NotReady, as a node that died.
func (s *soak) silence(ctx context.Context, c *soakCluster) {
	mgmt := s.world.mgmt.Client
	for sleep(ctx, 100*time.Millisecond) {
		if _, gone := c.isGone(c.terminalNode); gone || c.sim.Node(c.terminalNode) == nil {
			// CAPI deletes the node's Machine (a scale-down, a
			// MachineDeployment rollout) and drains it itself: the fault
			// would be injected on a node that goes, or is gone (seed
			// 424242, --clusters=8 --workers=4 --rounds=2: a nil node).
			s.cfg.Logf("Fault: node %s/%s not silenced: CAPI deletes its Machine", c.ns, c.terminalNode)
			return
		}
		began := false
		node := &corev1.Node{}
		if err := c.wl.Client.Get(ctx, client.ObjectKey{Name: c.terminalNode}, node); err == nil && node.Spec.Unschedulable {
			began = true
		}
		u := &upgradev1.TalosUpgrade{}
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil {
			for _, st := range u.Status.Machines {
				if st.Node == c.terminalNode && (st.Cordoned || st.Phase == upgradev1.MachinePhaseDraining) {
					began = true
				}
			}
		}
		if !began {
			continue
		}
		n := c.sim.Node(c.terminalNode)
		if n == nil {
			continue // Gone meanwhile: see above.
		}
		n.InjectFault(talossim.Faults{HangRPCs: []string{talossim.AllRPCs}})
		s.noteTransient(c, c.terminalNode, faultNodeSilent)
		if err := (&talossim.KubeNodeUpdater{Client: c.wl.Client}).NodeRebooting(ctx, c.terminalNode); err != nil {
			s.cfg.Logf("Marking node %s NotReady: %v", c.terminalNode, err)
		}
		s.cfg.Logf("Fault: node %s/%s silent for good after its drain began", c.ns, c.terminalNode)
		return
	}
}
