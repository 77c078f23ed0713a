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

package talosupgradepolicy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// PolicyNameLabel labels every TalosUpgrade with the name of its policy.
const PolicyNameLabel = "upgrade.tollgate.dev/policy-name"

var errNilClient = errors.New("the TalosUpgradePolicy controller needs a client")

// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgradepolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgradepolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgrades,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=releasechannels,verbs=get;list;watch

// Reconciler reconciles TalosUpgradePolicy objects.
type Reconciler struct {
	// Client reads and writes through the manager's cache.
	Client client.Client
	// WatchFilterValue is the value of the cluster.x-k8s.io/watch-filter
	// label that objects must carry to be reconciled; empty for all.
	WatchFilterValue string
	// Recorder records events on policies; none are recorded when nil.
	Recorder events.EventRecorder
	// APIReader reads the installer pull Secret of a policy that follows
	// releases, live, so that no Secret is cached; anonymous when nil.
	APIReader client.Reader
	// Releases lists the releases of installer repositories for the
	// policies that follow them; SetupWithManager gives a lister with its
	// default cache when nil.
	Releases *talos.ReleaseLister
	// Clock tells the time; the real clock when nil.
	Clock clock.PassiveClock
	// Claims say what a Machine CAPI hands over for an in-place update is
	// to run, the target of a policy whose target comes from CAPI;
	// inplace.DefaultClaims when empty.
	Claims inplace.Claims
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}
	// Set here, before the workers start, never lazily in Reconcile: the
	// controller reconciles several policies at once.
	if r.Releases == nil {
		r.Releases = &talos.ReleaseLister{}
	}
	if r.Claims.Infrastructure == nil {
		r.Claims = inplace.DefaultClaims()
	}
	// Machines carry no shard label: their events are mapped to the policy
	// of their Cluster, which does (machineToPolicy).
	inShard := builder.WithPredicates(predicates.ResourceHasFilterLabel(mgr.GetScheme(), ctrl.LoggerFrom(ctx), r.WatchFilterValue))
	err := ctrl.NewControllerManagedBy(mgr).
		For(&upgradev1.TalosUpgradePolicy{}, inShard).
		Owns(&upgradev1.TalosUpgrade{}, inShard).
		Watches(&upgradev1.TalosUpgrade{}, handler.EnqueueRequestsFromMapFunc(r.upgradeToClusterPolicy), inShard).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToPolicy), inShard).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToPolicy), builder.WithPredicates(handoverChanged)).
		Watches(&clusterv1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(r.machineToPolicy), builder.WithPredicates(created)).
		Watches(&upgradev1.ReleaseChannel{}, handler.EnqueueRequestsFromMapFunc(r.channelToPolicies), builder.WithPredicates(grantsChanged)).
		WithOptions(options).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the TalosUpgradePolicy controller: %w", err)
	}
	return nil
}

// clusterToPolicy maps a Cluster to the policy its label names.
func clusterToPolicy(_ context.Context, o client.Object) []ctrl.Request {
	name := o.GetLabels()[upgradev1.PolicyLabel]
	if name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// upgradeToClusterPolicy maps a TalosUpgrade to the policy its Cluster names
// now, when that is another policy than the rollout's: the Cluster moved, and
// its new policy replaces the old rollout once it is over (see
// ensureUpgrade). The old rollout's end and its deletion are events of the
// old policy only (its owner), so without this the new policy would wait for
// its next resync to take the Cluster over.
func (r *Reconciler) upgradeToClusterPolicy(ctx context.Context, o client.Object) []ctrl.Request {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok || u.Spec.ClusterName == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.ClusterName}, cluster); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the Cluster of a TalosUpgrade", "TalosUpgrade", klog.KObj(u))
		}
		return nil
	}
	name := cluster.Labels[upgradev1.PolicyLabel]
	if name == "" || name == u.Spec.PolicyName {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: u.Namespace, Name: name}}}
}

// ofPolicy reports whether u is the rollout of policy, and not the rollout of
// another policy that its Cluster moved from.
func ofPolicy(policy *upgradev1.TalosUpgradePolicy, u *upgradev1.TalosUpgrade) bool {
	return u.Spec.PolicyName == policy.Name || u.Spec.PolicyName == "" || metav1.IsControlledBy(u, policy)
}

// Reconcile keeps the TalosUpgrades of a policy in line with its Clusters.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	policy := &upgradev1.TalosUpgradePolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading TalosUpgradePolicy %s: %w", req.NamespacedName, err)
	}
	if !policy.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // TalosUpgrades go with it, by owner reference.
	}
	helper, err := patch.NewHelper(policy, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		opts := []patch.Option{patch.WithOwnedConditions{Conditions: []string{upgradev1.PolicyReadyCondition, upgradev1.PolicyRolloutCompletedCondition, upgradev1.PolicyFollowingReleasesCondition, upgradev1.PolicyChannelCondition}}}
		if reterr == nil {
			opts = append(opts, patch.WithStatusObservedGeneration{})
		}
		if err := helper.Patch(ctx, policy, opts...); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	// A manager sharded by watch filter serves the Clusters of its shard only.
	opts := []client.ListOption{client.InNamespace(policy.Namespace), client.MatchingFields{index.ClusterPolicyField: policy.Name}}
	if r.WatchFilterValue != "" {
		opts = append(opts, client.MatchingLabels{clusterv1.WatchLabel: r.WatchFilterValue})
	}
	clusters := &clusterv1.ClusterList{}
	if err := r.Client.List(ctx, clusters, opts...); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the Clusters of TalosUpgradePolicy %s: %w", klog.KObj(policy), err)
	}
	sort.Slice(clusters.Items, func(i, j int) bool { return clusters.Items[i].Name < clusters.Items[j].Name })

	// A policy the webhook would refuse (admitted by an earlier Tollgate, or
	// while the webhook was bypassed) starts no rollout: its Ready condition
	// says why.
	invalid, _ := plan.ValidatePolicy(policy)
	r.setReadyCondition(policy, invalid)

	// A policy that follows releases chooses its target first; one of a
	// channel reads the versions its Clusters' stages are granted.
	follow := r.reconcileFollow(ctx, policy, clusters.Items)
	channelTargets, err := r.readChannel(ctx, policy)
	if err != nil {
		return ctrl.Result{}, err
	}

	upgrades := make([]*upgradev1.TalosUpgrade, 0, len(clusters.Items))
	// moving are the Clusters that moved to this policy while the rollout
	// of their previous policy was not over: that rollout is replaced once
	// it is, and is none of this policy's to admit, count or wait for.
	moving := 0
	waiting := false
	var errs []error
	for i := range clusters.Items {
		var u *upgradev1.TalosUpgrade
		var err error
		if len(invalid) == 0 {
			u, err = r.ensureUpgrade(ctx, policy, &clusters.Items[i], channelTargets)
		} else {
			u, err = r.currentUpgrade(ctx, &clusters.Items[i])
		}
		switch {
		case err != nil:
			errs = append(errs, err)
		case u == nil:
			if policy.KeepsTalos() && len(invalid) == 0 {
				// Its rollout is made once its Machines run one known
				// Talos version, which no watched event says.
				waiting = true
			}
		case !ofPolicy(policy, u):
			moving++
		default:
			upgrades = append(upgrades, u)
		}
	}
	if err := r.admit(ctx, policy, clusters.Items, upgrades, invalid); err != nil {
		errs = append(errs, err)
	}
	setStatus(policy, clusters.Items, upgrades, moving)
	setChannelCondition(policy, channelTargets)
	setAdmittingCondition(policy, admissionGate(policy, upgrades, invalid))
	if moving == 0 {
		r.clearBypass(ctx, policy, upgrades)
	}
	res := ctrl.Result{RequeueAfter: follow.requeueAfter}
	if waiting || (channelTargets != nil && channelTargets.waitingForMachineOS) {
		res = util.LowestNonZeroResult(res, ctrl.Result{RequeueAfter: versionsRecheck})
	}
	return res, kerrors.NewAggregate(errs)
}

// ensureUpgrade creates or updates the TalosUpgrade of a Cluster so that it
// carries the policy's plan; it returns nil for a paused Cluster or one being
// deleted that has none yet. The controls users set on the TalosUpgrade
// (paused, cancel, bypass) are theirs and kept. For a policy of a channel,
// ct is what it read of the channel (see channel.go).
func (r *Reconciler) ensureUpgrade(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, cluster *clusterv1.Cluster, ct *channelTargets) (*upgradev1.TalosUpgrade, error) {
	plan := policy.Spec.UpgradePlan.DeepCopy()
	plan.TalosVersion = policy.Target()
	u := &upgradev1.TalosUpgrade{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(cluster), u)
	if policy.KeepsTalos() {
		current := ""
		if err == nil && ofPolicy(policy, u) {
			current = u.Spec.TalosVersion
		}
		running, rerr := r.runningTalos(ctx, cluster, policy.TargetsFromObjects())
		if rerr != nil {
			return nil, rerr
		}
		plan.TalosVersion = cmp.Or(current, running)
	}
	if policy.Spec.CAPIDriven() {
		current := ""
		if err == nil {
			current = u.Spec.TalosVersion
		}
		target, terr := r.capiTarget(ctx, policy, cluster, current)
		if terr != nil {
			return nil, terr
		}
		plan.TalosVersion = target
	}
	if ct != nil {
		var current *upgradev1.TalosUpgrade
		if err == nil && ofPolicy(policy, u) {
			current = u
		}
		talosVersion, kubernetesVersion, terr := r.channelTarget(ctx, ct, policy, cluster, current)
		if terr != nil {
			return nil, terr
		}
		plan.TalosVersion, plan.KubernetesVersion = talosVersion, kubernetesVersion
	}
	switch {
	case apierrors.IsNotFound(err) && plan.TalosVersion == "":
		// A policy following releases has not chosen its target yet, or
		// the Machines of a Cluster that keeps its Talos do not run one
		// known version yet.
		return nil, nil
	case apierrors.IsNotFound(err) && (annotations.IsPaused(cluster, cluster) || !cluster.DeletionTimestamp.IsZero()):
		// A paused Cluster is not touched, and one being deleted (or moved
		// away by clusterctl, which pauses it first) gets no new rollout:
		// its rollout is created when it is unpaused.
		return nil, nil
	case apierrors.IsNotFound(err):
		u = &upgradev1.TalosUpgrade{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: cluster.Namespace,
				Name:      cluster.Name,
				Labels:    upgradeLabels(policy, cluster),
			},
			Spec: upgradev1.TalosUpgradeSpec{ClusterName: cluster.Name, PolicyName: policy.Name, UpgradePlan: *plan},
		}
		if err := controllerutil.SetControllerReference(policy, u, r.Client.Scheme()); err != nil {
			return nil, err
		}
		ctrl.LoggerFrom(ctx).Info("Creating TalosUpgrade", "TalosUpgrade", klog.KObj(u), "Cluster", klog.KObj(cluster))
		if err := r.Client.Create(ctx, u); err != nil {
			return nil, fmt.Errorf("creating TalosUpgrade %s: %w", klog.KObj(u), err)
		}
		return u, nil
	case err != nil:
		return nil, fmt.Errorf("reading TalosUpgrade %s: %w", klog.KObj(cluster), err)
	}
	if !ofPolicy(policy, u) {
		// The Cluster moved to this policy: the TalosUpgrade of the old policy
		// is replaced once it is over (its end, then its deletion, bring this
		// policy back: see upgradeToClusterPolicy).
		if !u.Finished() {
			return u, nil
		}
		if err := r.Client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting TalosUpgrade %s of policy %q: %w", klog.KObj(u), u.Spec.PolicyName, err)
		}
		return u, nil
	}
	if plan.TalosVersion == "" || apiequality.Semantic.DeepEqual(u.Spec.UpgradePlan, *plan) {
		return u, nil
	}
	helper, err := patch.NewHelper(u, r.Client)
	if err != nil {
		return nil, err
	}
	u.Spec.UpgradePlan = *plan
	// A new plan is a new rollout: it waits for a slot again, unless it is
	// at work and holds one.
	if u.Finished() {
		delete(u.Annotations, upgradev1.AdmittedAnnotation)
	}
	if err := helper.Patch(ctx, u); err != nil {
		return nil, fmt.Errorf("updating the plan of TalosUpgrade %s: %w", klog.KObj(u), err)
	}
	return u, nil
}

// currentUpgrade returns the TalosUpgrade of a Cluster, or nil when it has
// none, as it is: the rollout of a policy that is not valid is neither made
// nor changed.
func (r *Reconciler) currentUpgrade(ctx context.Context, cluster *clusterv1.Cluster) (*upgradev1.TalosUpgrade, error) {
	u := &upgradev1.TalosUpgrade{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(cluster), u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading TalosUpgrade %s: %w", klog.KObj(cluster), err)
	}
	return u, nil
}

// clearBypass ends the policy's bypass once every rollout of the policy has
// ended: a bypass is for the rollouts it was asked for, not for the next
// target's.
func (r *Reconciler) clearBypass(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, upgrades []*upgradev1.TalosUpgrade) {
	b := policy.Spec.Bypass
	if b == nil || len(upgrades) == 0 {
		return
	}
	for _, u := range upgrades {
		if !u.Finished() || !onTarget(policy, u) {
			return
		}
	}
	ctrl.LoggerFrom(ctx).Info("Every rollout of the policy ended: clearing its bypass", "requestedBy", b.RequestedBy)
	if r.Recorder != nil && b.Any() {
		r.Recorder.Eventf(policy, nil, corev1.EventTypeNormal, "BypassCleared", "Bypass", "Every rollout of the policy ended: the bypass requested by %s is cleared", b.RequestedBy)
	}
	policy.Spec.Bypass = nil
}

// onTarget reports whether u, a rollout of the policy, goes to the policy's
// current targets: its Talos target (any, for a policy that keeps each
// Cluster's Talos or takes it from CAPI) and its Kubernetes target. A
// rollout of a channel's policy is on its target: its spec is the version
// its Cluster's stage is granted.
func onTarget(policy *upgradev1.TalosUpgradePolicy, u *upgradev1.TalosUpgrade) bool {
	if policy.Spec.CAPIDriven() || policy.Spec.ChannelDriven() {
		return true
	}
	if !sameTarget(u.Spec.KubernetesVersion, policy.Spec.KubernetesVersion) {
		return false
	}
	return policy.KeepsTalos() || sameTarget(u.Spec.TalosVersion, policy.Target())
}

// sameTarget reports whether a rollout's target and the policy's are the
// same: both unset (no Kubernetes target, or no Talos release chosen yet),
// or the same version (talos.SameVersion, for which "" is never a version).
func sameTarget(rollout, policy string) bool {
	return rollout == policy || talos.SameVersion(rollout, policy)
}

// setStatus summarises the fleet: the rollouts of the policy, and the
// Clusters moving to it (moving), whose rollout has yet to start.
func setStatus(policy *upgradev1.TalosUpgradePolicy, clusters []clusterv1.Cluster, upgrades []*upgradev1.TalosUpgrade, moving int) {
	counts := upgradev1.FleetCounts{Selected: int32(len(clusters)), Pending: int32(moving)}
	for _, u := range upgrades {
		switch u.Status.Phase {
		case upgradev1.UpgradePhaseCompleted:
			counts.Completed++
		case upgradev1.UpgradePhaseFailed:
			counts.Failed++
		case upgradev1.UpgradePhasePaused:
			counts.Paused++
		case upgradev1.UpgradePhaseInProgress, upgradev1.UpgradePhaseWaitingForHealthChecks:
			counts.InProgress++
		default:
			counts.Pending++
		}
	}
	policy.Status.Clusters = counts

	completed := metav1.Condition{Type: upgradev1.PolicyRolloutCompletedCondition}
	switch {
	case counts.Selected == 0:
		completed.Status, completed.Reason = metav1.ConditionFalse, upgradev1.NoClustersSelectedReason
		completed.Message = fmt.Sprintf("no Cluster carries the label %s=%s", upgradev1.PolicyLabel, policy.Name)
	case counts.Failed > 0:
		completed.Status, completed.Reason = metav1.ConditionFalse, upgradev1.RolloutFailedReason
		completed.Message = fmt.Sprintf("%d of %d Clusters failed", counts.Failed, counts.Selected)
	case counts.Completed == counts.Selected:
		completed.Status, completed.Reason = metav1.ConditionTrue, upgradev1.RolloutCompletedReason
		completed.Message = fmt.Sprintf("all %d Clusters run %s", counts.Selected, policy.TargetName())
	default:
		completed.Status, completed.Reason = metav1.ConditionFalse, upgradev1.RolloutInProgressReason
		completed.Message = fmt.Sprintf("%d of %d Clusters completed", counts.Completed, counts.Selected)
	}
	conditions.Set(policy, completed)
}

// setReadyCondition sets the Ready condition: False with reason Invalid and
// the fields at fault when the policy is one the webhook refuses (invalid,
// as plan.ValidatePolicy says), with a Warning event when it becomes so;
// True otherwise, with reason Paused for a paused policy.
func (r *Reconciler) setReadyCondition(policy *upgradev1.TalosUpgradePolicy, invalid field.ErrorList) {
	if len(invalid) > 0 {
		msg := "the policy cannot be carried out as written, and starts no rollout until it is fixed: " + invalid.ToAggregate().Error()
		if r.Recorder != nil && conditions.GetReason(policy, upgradev1.PolicyReadyCondition) != upgradev1.PolicyInvalidReason {
			r.Recorder.Eventf(policy, nil, corev1.EventTypeWarning, upgradev1.PolicyInvalidReason, "Validate", "%s", msg)
		}
		conditions.Set(policy, metav1.Condition{
			Type: upgradev1.PolicyReadyCondition, Status: metav1.ConditionFalse, Reason: upgradev1.PolicyInvalidReason, Message: msg,
		})
		return
	}
	ready := metav1.Condition{Type: upgradev1.PolicyReadyCondition, Status: metav1.ConditionTrue, Reason: upgradev1.PolicyValidReason}
	if policy.Spec.Paused {
		ready.Reason, ready.Message = upgradev1.PolicyPausedReason, "the policy is paused: no rollout starts a new Machine"
	}
	conditions.Set(policy, ready)
}

// upgradeLabels are the labels of the TalosUpgrade of a Cluster: its policy,
// its Cluster, and the Cluster's watch filter, so that the manager serving
// the Cluster's shard serves its rollout too.
func upgradeLabels(policy *upgradev1.TalosUpgradePolicy, cluster *clusterv1.Cluster) map[string]string {
	labels := map[string]string{PolicyNameLabel: policy.Name, clusterv1.ClusterNameLabel: cluster.Name}
	if v, ok := cluster.Labels[clusterv1.WatchLabel]; ok {
		labels[clusterv1.WatchLabel] = v
	}
	return labels
}
