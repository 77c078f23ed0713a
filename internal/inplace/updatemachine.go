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

package inplace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosimage"
)

const (
	// DefaultRetryAfter is how long CAPI waits before it asks again about a
	// Machine whose in-place update is not done.
	DefaultRetryAfter = 5 * time.Second

	// LastStepsRetryAfter is how long CAPI waits before it asks again about
	// a Machine in the last steps of its update, whatever Extension.RetryAfter
	// says: its node is back on the version CAPI asked for, and Tollgate
	// proves and releases it, which takes seconds (only a hook owner's hold
	// can keep it longer, and a held Machine is asked about at the usual
	// pace). CAPI asks again no sooner than retryAfterSeconds, even when the
	// Machine changes, so that done is heard within a second of the record
	// Completed instead of up to RetryAfter later.
	LastStepsRetryAfter = time.Second
)

// UpdateMachine answers CAPI's UpdateMachine hook for the Machine the
// request names: done (retryAfterSeconds 0) once its rollout verified the
// node on the Talos version its InfraMachine asks for and, for a worker, on
// the kubelet version its spec.version asks for, and released it (its
// record Completed, the node uncordoned and skip-remediation removed), a
// Failure once the rollout failed the Machine (for good: Tollgate does not
// upgrade it again for the same version) or when the Machine is not one
// Tollgate updates, and otherwise Success with retryAfterSeconds and what the update waits
// for, which CAPI shows on the Machine's Updating condition. It makes no
// change itself: the TalosUpgrade controller upgrades a Machine CAPI handed
// over (ReadHandover) through the gates of the Cluster's policy, and the
// answer reports how far that went, from the objects the apiserver holds,
// never from the request alone. In the last steps of an update (the node
// back on the target, verified, proven and released) CAPI is asked to ask
// again within LastStepsRetryAfter, so that it hears done soon after the
// record Completed. The request only names the Machine; a
// request whose desired InfraMachine image or Kubernetes version differs
// from what the apiserver holds is answered Failure. When the apiserver
// cannot be read, the answer is in progress: nothing is known to have
// failed.
func (u *Extension) UpdateMachine(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
	key := client.ObjectKey{Namespace: req.Desired.Machine.Namespace, Name: req.Desired.Machine.Name}
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KRef(key.Namespace, key.Name))
	ctx = ctrl.LoggerInto(ctx, log)
	a, err := u.answer(ctx, key, req)
	if err != nil {
		// Reading the world failed (the apiserver unreachable, a timeout):
		// that says nothing of the update, which goes on. It is answered
		// in progress, for CAPI to ask again after retryAfterSeconds; a
		// Failure would mark the Machine InPlaceUpdateFailed until the next
		// answer although nothing failed.
		log.Info("Answering UpdateMachine: in progress, the world could not be read", "err", err.Error())
		a = updateAnswer{message: fmt.Sprintf("in progress; the update's state could not be read, asking again: %v", err)}
	}
	switch {
	case a.failure:
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		log.Info("Answering UpdateMachine: failed", "reason", a.message)
	case a.done:
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		log.Info("Answering UpdateMachine: done", "message", a.message)
	default:
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		resp.SetRetryAfterSeconds(int32(u.retryAfter(a).Seconds()))
		log.V(4).Info("Answering UpdateMachine: in progress", "message", a.message)
	}
	resp.SetMessage(a.message)
}

// retryAfter is how long CAPI waits before it asks again after an "in
// progress" answer a: RetryAfter (DefaultRetryAfter when zero), at most
// LastStepsRetryAfter in the update's last steps, and never less than a
// second, the least retryAfterSeconds can say.
func (u *Extension) retryAfter(a updateAnswer) time.Duration {
	d := DefaultRetryAfter
	if u.RetryAfter > 0 {
		d = u.RetryAfter
	}
	if a.lastSteps {
		d = min(d, LastStepsRetryAfter)
	}
	return max(time.Second, d)
}

// updateState is what the apiserver says of a Machine CAPI asks Tollgate
// to update in place, read by Updater.read.
type updateState struct {
	// machine is the Machine, live.
	machine *clusterv1.Machine
	// handover is what its InfraMachine asks for; nil while CAPI has yet
	// to write it.
	handover *Handover
	// policy is the policy of the Machine's Cluster.
	policy *upgradev1.TalosUpgradePolicy
	// upgrade is the Cluster's rollout; nil while there is none.
	upgrade *upgradev1.TalosUpgrade
}

// updateAnswer is what UpdateMachine answers.
type updateAnswer struct {
	// done is true when Tollgate's work on the Machine is finished: its
	// record Completed.
	done bool
	// failure is true when the update failed for good, or the Machine is
	// not one Tollgate updates.
	failure bool
	// lastSteps is true, for an update neither done nor failed, when the
	// node is back on the version asked for and Tollgate proves and
	// releases it, unheld: CAPI is asked to ask again soon
	// (LastStepsRetryAfter).
	lastSteps bool
	// message says what was done, what failed, or what the update waits
	// for.
	message string
}

// notHandledError is a request Tollgate does not serve; its message says
// why, and is the answer's.
type notHandledError struct{ err error }

func (e *notHandledError) Error() string { return e.err.Error() }
func (e *notHandledError) Unwrap() error { return e.err }

// notHandled returns a notHandledError with a formatted message.
func notHandled(format string, args ...any) error {
	return &notHandledError{err: fmt.Errorf(format, args...)}
}

// answer reads the world and decides.
func (u *Extension) answer(ctx context.Context, key client.ObjectKey, req *runtimehooksv1.UpdateMachineRequest) (updateAnswer, error) {
	if key.Name == "" || key.Namespace == "" {
		return updateAnswer{failure: true, message: "the request names no Machine (desired.machine.metadata.name and namespace)"}, nil
	}
	st, err := u.read(ctx, key, req)
	var nh *notHandledError
	if errors.As(err, &nh) {
		return updateAnswer{failure: true, message: err.Error()}, nil
	}
	if err != nil {
		return updateAnswer{}, err
	}
	return decideUpdate(st), nil
}

// read reads what decideUpdate needs, live. It returns a notHandledError for a Machine Tollgate does not update in place.
func (u *Extension) read(ctx context.Context, key client.ObjectKey, req *runtimehooksv1.UpdateMachineRequest) (updateState, error) {
	st := updateState{machine: &clusterv1.Machine{}}
	if err := u.Client.Get(ctx, key, st.machine); err != nil {
		if apierrors.IsNotFound(err) {
			return st, notHandled("Machine %s does not exist", key)
		}
		return st, fmt.Errorf("reading Machine %s: %w", key, err)
	}
	if !Marked(st.machine) {
		return st, notHandled("Machine %s is not being updated in place by CAPI (it lacks the %s annotation or the pending UpdateMachine hook); Tollgate acts only on Machines CAPI marked", key, clusterv1.UpdateInProgressAnnotation)
	}
	infra, err := readInfraMachine(ctx, u.Client, st.machine)
	if err != nil {
		return st, err
	}
	if raw := req.Desired.InfrastructureMachine.Raw; len(raw) > 0 {
		// The request is only CAPI's word: what it asks must be what the
		// apiserver holds.
		obj, err := ToMap(raw)
		if err != nil {
			return st, notHandled("reading the desired InfraMachine of the request: %w", err)
		}
		if requested, held := imageOf(obj), imageOf(infra.Object); requested != held {
			return st, notHandled("the request asks for %s, %s %s of Machine %s names %s: Tollgate acts on what the apiserver holds", requested, infra.GetKind(), infra.GetName(), key, held)
		}
	}
	if requested, held := req.Desired.Machine.Spec.Version, st.machine.Spec.Version; requested != "" && requested != held {
		return st, notHandled("the request asks for Kubernetes %s, Machine %s asks for %s: Tollgate acts on what the apiserver holds", requested, key, held)
	}
	cluster := &clusterv1.Cluster{}
	if err := u.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: st.machine.Spec.ClusterName}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return st, notHandled("Cluster %s of Machine %s does not exist", st.machine.Spec.ClusterName, key)
		}
		return st, fmt.Errorf("reading Cluster %s: %w", st.machine.Spec.ClusterName, err)
	}
	if name := cluster.Labels[upgradev1.PolicyLabel]; name != "" {
		st.policy = &upgradev1.TalosUpgradePolicy{}
		if err := u.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, st.policy); err != nil {
			if !apierrors.IsNotFound(err) {
				return st, fmt.Errorf("reading TalosUpgradePolicy %s: %w", name, err)
			}
			st.policy = nil
		}
	}
	if st.policy == nil {
		return st, notHandled("Cluster %s is not selected by a TalosUpgradePolicy (label %s): Tollgate updates the Machines of a Cluster through its policy's gates; label it with a policy (targetFrom: CAPI to take the target from the templates)", klog.KObj(cluster), upgradev1.PolicyLabel)
	}
	declared, err := declaredVersion(ctx, u.Client, infra)
	if err != nil {
		return st, err
	}
	h, err := u.claims().handover(infra, declared, st.machine, st.policy.Spec.Installer)
	if err != nil {
		return st, notHandled("%w", err)
	}
	st.handover = h
	st.upgrade = &upgradev1.TalosUpgrade{}
	if err := u.Client.Get(ctx, client.ObjectKeyFromObject(cluster), st.upgrade); err != nil {
		if !apierrors.IsNotFound(err) {
			return st, fmt.Errorf("reading TalosUpgrade %s: %w", klog.KObj(cluster), err)
		}
		st.upgrade = nil
	}
	return st, nil
}

// decideUpdate is the answer to UpdateMachine for what the apiserver says.
func decideUpdate(st updateState) updateAnswer {
	m := st.machine
	if st.handover == nil {
		return updateAnswer{message: "waiting for CAPI to write the desired InfraMachine"}
	}
	want := st.handover.Version
	u := st.upgrade
	if u == nil {
		return updateAnswer{message: fmt.Sprintf("waiting for TalosUpgradePolicy %s to start the rollout of Cluster %s to %s", st.policy.Name, m.Spec.ClusterName, want)}
	}
	moved := ""
	switch {
	case !talos.SameVersion(u.Spec.TalosVersion, want) && !st.policy.Spec.CAPIDriven():
		// The policy's own target moved after CAPI handed the Machine
		// over (it was claimed because the template asked for the
		// policy's target then). CAPI never takes a Machine back once it
		// moved it, so a Failure would leave it marked for ever: the
		// policy's target wins, as it does for every Machine of the
		// Cluster, and the update is done once the rollout verified the
		// Machine on it; TemplatesOnTarget names the template to change.
		moved = fmt.Sprintf(" (its template asks for %s, but TalosUpgradePolicy %s (targetFrom: Policy) moved to %s since CAPI handed it over, and the policy's target wins: change the template to %s)", want, st.policy.Name, u.Spec.TalosVersion, u.Spec.TalosVersion)
		want = u.Spec.TalosVersion
	case !talos.SameVersion(u.Spec.TalosVersion, want):
		return updateAnswer{message: fmt.Sprintf("waiting: the rollout of Cluster %s is on %s; Machine %s asks for %s, which follows", u.Spec.ClusterName, u.Spec.TalosVersion, m.Name, want)}
	}
	answer := decideRecord(st, want)
	answer.message += moved
	return answer
}

// decideRecord is the answer to UpdateMachine for a Machine the rollout
// takes to Talos want, from its record.
func decideRecord(st updateState, want string) updateAnswer {
	m, u := st.machine, st.upgrade
	kubelet := st.handover.KubernetesVersion
	runs := "Talos " + want
	if kubelet != "" {
		runs += " and kubelet " + kubelet
	}
	// With its own target, the policy's records move no kubelet unless it
	// has a Kubernetes target too: a kubelet that runs what the Machine
	// asks already is done (CAPI asks only what the policy rolls out,
	// judge).
	kubeletRuns := !st.policy.Spec.CAPIDriven() && kubelet != "" && m.Status.NodeInfo != nil && talos.SameVersion(m.Status.NodeInfo.KubeletVersion, kubelet)
	var record *upgradev1.MachineUpgradeStatus
	for i := range u.Status.Machines {
		if r := &u.Status.Machines[i]; r.Machine == m.Name && talos.SameVersion(r.TargetVersion, want) && (asksKubelet(r, kubelet) || kubeletRuns) {
			record = r
		}
	}
	switch {
	case record == nil:
		return updateAnswer{message: fmt.Sprintf("waiting for the rollout of Cluster %s to take Machine %s in for %s", u.Spec.ClusterName, m.Name, runs)}
	case record.Phase == upgradev1.MachinePhaseCompleted && (record.Cordoned || record.SkipRemediationSet):
		// Completed while a release did not go through (the workload
		// cluster or the apiserver refused it): Tollgate undoes it on its
		// next reconcile, and only then is its work on the Machine done.
		return updateAnswer{lastSteps: true, message: fmt.Sprintf("Machine %s runs %s; waiting for Tollgate to release it (uncordon its node, remove %s)", m.Name, runs, clusterv1.MachineSkipRemediationAnnotation)}
	case record.Phase == upgradev1.MachinePhaseCompleted:
		return updateAnswer{done: true, message: fmt.Sprintf("Machine %s runs %s", m.Name, runs)}
	case record.Phase == upgradev1.MachinePhaseFailed:
		return updateAnswer{failure: true, message: fmt.Sprintf("the in-place update of Machine %s to %s failed: %s; Tollgate does not try it again: change the template, or delete the Machine for CAPI to replace it", m.Name, runs, record.Message)}
	case record.Phase == upgradev1.MachinePhasePending:
		why := u.Status.BlockedBy
		if record.Message != "" {
			why = record.Message
		}
		if why == "" {
			why = string(u.Status.Phase)
		}
		return updateAnswer{message: fmt.Sprintf("waiting to start (rollout of Cluster %s: %s)", u.Spec.ClusterName, why)}
	case record.Phase == upgradev1.MachinePhaseWaitingForHold && len(record.HeldBy) > 0:
		return updateAnswer{message: fmt.Sprintf("held at %s by %v", record.HoldPoint, record.HeldBy)}
	}
	msg := string(record.Phase)
	if record.Message != "" {
		msg += ": " + record.Message
	}
	return updateAnswer{message: msg, lastSteps: inLastSteps(record)}
}

// inLastSteps reports whether a record neither Completed nor Failed is in
// the last steps of its Machine's update: its node back on the target and
// being verified (Verifying), or proven and released, unheld
// (WaitingForHold at postUpgrade, which ends in Completed once the holds
// and hooks of that point let it).
func inLastSteps(r *upgradev1.MachineUpgradeStatus) bool {
	switch r.Phase {
	case upgradev1.MachinePhaseVerifying:
		return true
	case upgradev1.MachinePhaseWaitingForHold:
		return r.HoldPoint == upgradev1.HoldPointPostUpgrade && len(r.HeldBy) == 0
	}
	return false
}

// asksKubelet reports whether a record moves its node's kubelet to version,
// or, for no version, leaves it alone.
func asksKubelet(r *upgradev1.MachineUpgradeStatus, version string) bool {
	k := r.Kubernetes
	if version == "" || k == nil {
		return version == "" && k == nil
	}
	return k.Part == upgradev1.KubernetesPartKubelet && talos.SameVersion(k.Version, version)
}

// imageOf returns the image field of an InfraMachine (as a JSON map), as
// JSON, for a comparison; the whole spec for a kind whose image field is not
// known.
func imageOf(obj map[string]any) string {
	path := []string{"spec"}
	if gk, err := groupKind(obj); err == nil {
		if k, ok := talosimage.KindOf(gk.Group, gk.Kind); ok {
			path = k.Path(obj, false)
		}
	}
	v, _ := lookup(obj, path)
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}
