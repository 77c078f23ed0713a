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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Living-fleet event kinds: the fleet changes under the rollout.
const (
	faultScaleUp     = "machinedeployment-scale-up"
	faultScaleDown   = "machinedeployment-scale-down"
	faultMHCReplace  = "machine-replaced-like-mhc"
	faultLeavePolicy = "cluster-leaves-and-rejoins-policy"
	faultNewTarget   = "new-target-after-completion"
)

// fleetFaults are scripted per Cluster and played by the fleet loop.
var fleetFaults = []string{faultScaleUp, faultScaleDown, faultMHCReplace, faultLeavePolicy, faultNewTarget}

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
	// rollout of c does not complete (a kill between an upgrade's intent
	// and its call fails Machines, an accepted outcome).
	others []*soakCluster
}

// scriptFleet scripts the living-fleet events of a round: in round 0 every
// kind once, on a random Cluster; later, each kind on each Cluster with
// FleetFaultPercent chance. A new target is only set on Clusters without a
// terminal fault, whose rollout can complete.
func (s *soak) scriptFleet(clusters []*soakCluster, round int) []fleetEvent {
	var events []fleetEvent
	for _, kind := range fleetFaults {
		var eligible []*soakCluster
		for _, c := range clusters {
			if kind != faultNewTarget || c.terminal == "" {
				eligible = append(eligible, c)
			}
		}
		if len(eligible) == 0 {
			continue
		}
		var picked []*soakCluster
		if round == 0 {
			picked = append(picked, eligible[s.rng.IntN(len(eligible))])
		} else {
			for _, c := range eligible {
				if s.rng.IntN(100) < s.cfg.FleetFaultPercent {
					picked = append(picked, c)
				}
			}
		}
		for _, c := range picked {
			c.fleet = append(c.fleet, kind)
			events = append(events, fleetEvent{
				c: c, kind: kind, rng: rand.New(rand.NewPCG(s.rng.Uint64(), 0xf1ee7)), //nolint:gosec // Reproducible chaos.
				after:  2*time.Second + time.Duration(s.rng.Int64N(int64(10*time.Second))),
				others: slices.DeleteFunc(slices.Clone(eligible), func(o *soakCluster) bool { return o == c }),
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
			if err := s.playFleet(ctx, e); err != nil {
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
		name := c.newWorker()
		s.cfg.Logf("Fleet: MachineDeployment of %s/%s scaled up: Machine %s joins, without a node yet", c.ns, c.name, name)
		return s.join(ctx, c, name, e.rng)
	case faultScaleDown:
		m, err := s.pickWorker(ctx, c, e.rng, false)
		if err != nil {
			return err
		}
		s.cfg.Logf("Fleet: MachineDeployment of %s/%s scaled down: Machine %s deleted", c.ns, c.name, m.Name)
		return s.remove(ctx, c, m)
	case faultMHCReplace:
		m, err := s.pickWorker(ctx, c, e.rng, true)
		if err != nil {
			return err
		}
		if err := s.remove(ctx, c, m); err != nil {
			return err
		}
		name := c.newWorker()
		s.cfg.Logf("Fleet: MachineHealthCheck of %s/%s replaced Machine %s by %s", c.ns, c.name, m.Name, name)
		return s.join(ctx, c, name, e.rng)
	case faultLeavePolicy:
		return s.leaveAndRejoin(ctx, c, e.rng)
	case faultNewTarget:
		err := s.newTarget(ctx, c)
		for _, o := range e.others {
			if !errors.Is(err, errNotCompleted) {
				break
			}
			s.cfg.Logf("Fleet: %v; the new target goes to %s/%s instead", err, o.ns, o.name)
			err = s.newTarget(ctx, o)
		}
		return err
	}
	return fmt.Errorf("unknown fleet event %q", e.kind)
}

// newWorker names the next worker Machine to join the Cluster.
func (c *soakCluster) newWorker() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	name := fmt.Sprintf("%s-joiner-%d", c.name, c.next)
	c.joiners = append(c.joiners, name)
	return name
}

// join creates a worker Machine as a MachineSet does: first provisioning,
// without nodeRef, addresses or nodeInfo; 3 to 8s later its node is up on
// the Cluster's old version, and the Machine reports it.
func (s *soak) join(ctx context.Context, c *soakCluster, name string, rng *rand.Rand) error {
	mgmt := s.world.mgmt.Client
	m := builder.Machine(c.ns, name, c.name, builder.WithMachineDeployment(c.name+"-md-0"))
	m.Status = clusterv1.MachineStatus{Phase: string(clusterv1.MachinePhaseProvisioning)}
	if err := builder.CreateMachine(ctx, mgmt, m); err != nil {
		return err
	}
	if !sleep(ctx, 3*time.Second+time.Duration(rng.Int64N(int64(5*time.Second)))) {
		return ctx.Err()
	}
	n, err := c.sim.AddNode(talossim.NodeConfig{Name: name, Version: c.from})
	if err != nil {
		return err
	}
	if err := (&talossim.KubeNodeUpdater{Client: c.wl.Client}).EnsureNode(ctx, n); err != nil {
		return err
	}
	if err := mgmt.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
		return err
	}
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: name}
	m.Status.Addresses = []clusterv1.MachineAddress{{Type: clusterv1.MachineInternalIP, Address: n.Address()}}
	m.Status.NodeInfo = &corev1.NodeSystemInfo{OSImage: builder.OSImage(c.from), KubeletVersion: m.Spec.Version}
	m.Status.Phase = string(clusterv1.MachinePhaseRunning)
	if err := mgmt.Status().Update(ctx, m); err != nil {
		return fmt.Errorf("writing the status of Machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	s.cfg.Logf("Fleet: Machine %s/%s has its node, on %s", c.ns, name, c.from)
	return nil
}

// pickWorker picks a worker Machine still present, other than the one of
// the terminal fault's node; mhc picks, as a MachineHealthCheck does, only
// among Machines without the skip-remediation annotation.
func (s *soak) pickWorker(ctx context.Context, c *soakCluster, rng *rand.Rand, mhc bool) (*clusterv1.Machine, error) {
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return nil, err
	}
	var candidates []*clusterv1.Machine
	for i := range machines.Items {
		m := &machines.Items[i]
		_, cp := m.Labels[clusterv1.MachineControlPlaneLabel]
		_, skip := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]
		if cp || m.DeletionTimestamp != nil || m.Status.NodeRef.Name == "" || m.Status.NodeRef.Name == c.terminalNode || mhc && skip {
			continue
		}
		candidates = append(candidates, m)
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("no worker Machine to delete")
	}
	return candidates[rng.IntN(len(candidates))], nil
}

// remove deletes a Machine as CAPI does: the Machine and its Node go, and
// the node's Talos API stops answering.
func (s *soak) remove(ctx context.Context, c *soakCluster, m *clusterv1.Machine) error {
	c.mu.Lock()
	c.gone[m.Name] = time.Now()
	c.mu.Unlock()
	if err := s.world.mgmt.Client.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Status.NodeRef.Name}}
	if err := c.wl.Client.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s: %w", node.Name, err)
	}
	if n := c.sim.Node(node.Name); n != nil {
		n.InjectFault(talossim.Faults{HangRPCs: []string{talossim.AllRPCs}})
	}
	return nil
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
		c.sim.Node(c.terminalNode).InjectFault(talossim.Faults{HangRPCs: []string{talossim.AllRPCs}})
		s.noteTransient(c, c.terminalNode, faultNodeSilent)
		if err := (&talossim.KubeNodeUpdater{Client: c.wl.Client}).NodeRebooting(ctx, c.terminalNode); err != nil {
			s.cfg.Logf("Marking node %s NotReady: %v", c.terminalNode, err)
		}
		s.cfg.Logf("Fault: node %s/%s silent for good after its drain began", c.ns, c.terminalNode)
		return
	}
}
