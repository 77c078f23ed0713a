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
	"math/rand/v2"
	"strings"
	"time"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// The moments a Kubernetes target comes, as a fleet's do, chosen by the
// seed for each faultKubernetesTarget (pickKubeMode):
//
//   - kubeWithTalos: once the rollout completed, with the next Talos
//     target (planned together: one reboot per node);
//   - kubeAlone: once the rollout completed, on the Talos the Cluster runs
//     (the policy's talosVersion kept): a Kubernetes change reboots
//     nothing;
//   - kubeMidRollout: while the Cluster's Talos rollout is in flight (a
//     Machine done, another not started), its Talos target kept. Tollgate
//     is to retarget the rollout: plan a path with the Kubernetes target
//     (status.path.kubernetesTarget), start again the records not in
//     flight, and let a Machine in flight finish its Talos change first.
//     Invariants 3 and 16 judge its changes as any other target's: a
//     retarget changes no node's Kubernetes twice, nor with a boot no
//     upgrade made, nor before the objects agree. A rollout that is not
//     retargeted within retargetTimeout is a violation of invariant 16
//     (retargetState); the soak then does what Tollgate's preflight asks
//     of the user (takes the Kubernetes target off the policy, lets the
//     Talos rollout complete, sets it again), so that the round ends.
//
// At every moment, the rollout must plan a path with the Kubernetes target
// within retargetTimeout of the policy and the objects agreeing (invariant
// 16, judgeRetarget): a target alone restarts a Completed rollout.
//
// A new Talos target scripted on the same Cluster is set with the
// Kubernetes target (kubeWithTalos), or follows its rollout.
const (
	kubeWithTalos  = "with the next Talos target"
	kubeAlone      = "alone"
	kubeMidRollout = "mid-rollout"
)

// pickKubeMode picks the moment of a Kubernetes target: a quarter with
// the next Talos target (the only moment the soak's runs played before),
// the rest alone or mid-rollout, in even parts.
func pickKubeMode(rng *rand.Rand) string {
	switch n := rng.IntN(8); {
	case n < 2:
		return kubeWithTalos
	case n < 5:
		return kubeAlone
	}
	return kubeMidRollout
}

// kubeModeKind is the key under which the report counts the Kubernetes
// targets that came at a moment (its faults count them all as
// faultKubernetesTarget).
func kubeModeKind(mode string) string { return faultKubernetesTarget + " " + mode }

// retargetTimeout bounds the wait for a rollout given a Kubernetes target
// mid-rollout to plan a path with it: past a failed preflight's retry
// (30s), leader failovers and apiserver cuts included.
const retargetTimeout = 75 * time.Second

// Retarget states retargetProblem returns.
const (
	retargetPlanned = "planned"
	retargetOver    = "over"
	retargetWaiting = "waiting"
)

// retargetState says where a rollout given Kubernetes target version
// stands: retargetPlanned once its path has the target (with the Talos
// target), retargetOver once it ended otherwise than Completed without one
// (a terminal fault failed it), and retargetWaiting otherwise. problem is
// set when it waited too long: waited is how long since the objects and
// the policy agreed; mode says when the target came.
func retargetState(u *upgradev1.TalosUpgrade, version, mode string, waited time.Duration) (state, problem string) {
	if p := u.Status.Path; p != nil && talos.SameVersion(p.KubernetesTarget, version) && talos.SameVersion(p.Target, u.Spec.TalosVersion) {
		return retargetPlanned, ""
	}
	if over(u) && u.Status.Phase != upgradev1.UpgradePhaseCompleted {
		return retargetOver, ""
	}
	if waited < retargetTimeout {
		return retargetWaiting, ""
	}
	preflight := "no preflight result"
	if c := conditions.Get(u, upgradev1.PreflightSucceededCondition); c != nil {
		preflight = fmt.Sprintf("PreflightSucceeded %s/%s: %q", c.Status, c.Reason, c.Message)
	}
	var pending, done []string
	for _, st := range u.Status.Machines {
		switch st.Phase {
		case upgradev1.MachinePhasePending:
			pending = append(pending, st.Machine)
		case upgradev1.MachinePhaseCompleted:
			done = append(done, st.Machine)
		}
	}
	return retargetWaiting, fmt.Sprintf("a Kubernetes target %s set %s was not planned within %s (rollout %s, blocked by %q; %s); Machines completed: %s; waiting to start: %s",
		version, mode, retargetTimeout, u.Status.Phase, u.Status.BlockedBy, preflight, strings.Join(done, ", "), strings.Join(pending, ", "))
}

// midRollout reports whether a Talos rollout is in flight with a Machine
// done and another not started: the moment of kubeMidRollout.
func midRollout(u *upgradev1.TalosUpgrade, target string) bool {
	if over(u) || !talos.SameVersion(u.Spec.TalosVersion, target) || u.Spec.KubernetesVersion != "" {
		return false
	}
	done, waiting := false, false
	for _, st := range u.Status.Machines {
		switch {
		case st.Phase == upgradev1.MachinePhaseCompleted && talos.SameVersion(st.TargetVersion, target) && !talos.SameVersion(st.FromVersion, target):
			done = true
		case st.Phase == upgradev1.MachinePhasePending && !talos.SameVersion(st.FromVersion, target):
			waiting = true
		}
	}
	return done && waiting
}

// waitMidRollout waits until the Cluster's rollout is mid-rollout
// (midRollout); false when it was over first.
func (s *soak) waitMidRollout(ctx context.Context, c *soakCluster) (bool, error) {
	for {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil {
			if midRollout(u, c.target()) {
				return true, nil
			}
			if over(u) && talos.SameVersion(u.Spec.TalosVersion, c.target()) {
				return false, nil
			}
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return false, ctx.Err()
		}
	}
}

// judgeRetarget waits for the rollout given Kubernetes target t to plan a
// path with it (retargetState), whatever its moment: a target alone on a
// Completed rollout starts it again, and one set mid-rollout retargets it.
// When it does not within retargetTimeout, it reports a violation of
// invariant 16; for a target set mid-rollout, it then does what the
// preflight asks of a user: takes the Kubernetes target off the policy,
// waits for the Talos rollout to end, and sets the target again once it
// completed (nothing may change the nodes' Kubernetes meanwhile: the
// target's agreement starts again then). A rollout that ended otherwise
// keeps no Kubernetes target.
func (s *soak) judgeRetarget(ctx context.Context, c *soakCluster, t *kubeTarget) error {
	mgmt := s.world.mgmt.Client
	key := client.ObjectKey{Namespace: c.ns, Name: c.name}
	for {
		u := &upgradev1.TalosUpgrade{}
		if err := mgmt.Get(ctx, key, u); err == nil && u.Spec.KubernetesVersion == t.version {
			state, problem := retargetState(u, t.version, t.mode, time.Since(t.agreeFrom))
			switch {
			case state == retargetPlanned:
				s.check(16)
				s.cfg.Logf("Kubernetes: %s/%s: the rollout planned its Kubernetes target (%s) %s after it came: %s",
					c.ns, c.name, t.describe(), time.Since(t.agreeFrom).Round(100*time.Millisecond), describeHops(u.Status.Path))
				return nil
			case state == retargetOver:
				s.cfg.Logf("Kubernetes: %s/%s: the rollout ended %s before it planned its Kubernetes target", c.ns, c.name, u.Status.Phase)
				return nil
			case problem != "":
				s.violation(16, "%s: %s", c.ns, problem)
				if t.mode != kubeMidRollout {
					return nil
				}
				return s.retargetByHand(ctx, c, t)
			}
		}
		if !sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// retargetByHand takes the Kubernetes target off the Cluster's policy,
// waits for the Talos rollout to end and, once it completed, sets the
// target again (the CAPI objects ask for it already).
func (s *soak) retargetByHand(ctx context.Context, c *soakCluster, t *kubeTarget) error {
	c.mu.Lock()
	// No node may change its Kubernetes until the target is set again.
	c.kube.agreeFrom = time.Now().Add(time.Hour)
	c.mu.Unlock()
	if err := s.patchKubernetesPolicy(ctx, c, ""); err != nil {
		return err
	}
	s.cfg.Logf("Fleet: %s/%s: the Kubernetes target taken off the policy, as its preflight asks, until the Talos rollout completed", c.ns, c.name)
	for {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && u.Spec.KubernetesVersion == "" && over(u) {
			if u.Status.Phase != upgradev1.UpgradePhaseCompleted {
				c.mu.Lock()
				c.kube = kubeTarget{agreeFrom: c.kube.agreeFrom}
				c.mu.Unlock()
				s.cfg.Logf("Fleet: %s/%s: the Talos rollout ended %s: no Kubernetes target set again", c.ns, c.name, u.Status.Phase)
				return nil
			}
			break
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
	c.mu.Lock()
	t.agreeFrom = time.Now()
	c.kube.agreeFrom = t.agreeFrom
	c.mu.Unlock()
	if err := s.patchKubernetesPolicy(context.WithoutCancel(ctx), c, t.version); err != nil {
		return err
	}
	s.cfg.Logf("Fleet: %s/%s: the Talos rollout completed; Kubernetes target %s set again", c.ns, c.name, t.version)
	// Set again, it is a target alone on a Completed rollout.
	t.mode = kubeAlone + " (set again once the Talos rollout completed)"
	return s.judgeRetarget(ctx, c, t)
}

// patchKubernetesPolicy sets the policy's kubernetesVersion alone.
func (s *soak) patchKubernetesPolicy(ctx context.Context, c *soakCluster, version string) error {
	mgmt := s.world.mgmt.Client
	p := &upgradev1.TalosUpgradePolicy{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: policyName}, p); err != nil {
		return err
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.KubernetesVersion = version
	if err := mgmt.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("setting kubernetesVersion %q on TalosUpgradePolicy %s/%s: %w", version, c.ns, policyName, err)
	}
	return nil
}

// describeHops describes a rollout's path for a log line.
func describeHops(p *upgradev1.UpgradePathStatus) string {
	if p == nil {
		return "no path"
	}
	parts := make([]string, 0, len(p.Hops))
	for _, h := range p.Hops {
		parts = append(parts, fmt.Sprintf("%s/%s/%s", h.Stage, h.Version, h.KubernetesVersion))
	}
	return strings.Join(parts, " -> ")
}

// describe says, for a log line, when the Kubernetes target came.
func (t kubeTarget) describe() string {
	if t.mode == kubeWithTalos {
		return "with Talos target " + t.talos
	}
	return t.mode
}
