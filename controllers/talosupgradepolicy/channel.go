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
	"fmt"
	"reflect"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file gives the Clusters of a policy with targetFrom: Channel their
// targets: each Cluster the version its stage of the channel is granted
// (ReleaseChannel.StageGrant, which the channel writes in the status patch
// that opens the stage's gate), read from the channel's status and never
// written back. A Cluster in no stage, or in a stage not granted a version
// yet, keeps its rollout as it is (or gets none); a rollout at work is
// never given another version under it: it is retargeted once it ended,
// so that no Cluster ever runs two versions at once.

// channelTargets is what a reconcile of a channel's policy read of its
// channel, and what it found giving its Clusters their targets.
type channelTargets struct {
	// channel is the channel; nil when it does not exist (yet).
	channel *upgradev1.ReleaseChannel
	// granted counts the Clusters given a version, by stage and version;
	// unstaged and ungranted those in no stage (or claimed by several) and
	// those whose stage has no version yet; held those whose rollout at
	// work keeps its version until it ended.
	granted             map[string]int
	unstaged, ungranted int
	held                int
	waitingForMachineOS bool
}

// readChannel reads the channel a policy takes its targets from; nil for a
// policy that takes none, or whose channel does not exist (yet).
func (r *Reconciler) readChannel(ctx context.Context, policy *upgradev1.TalosUpgradePolicy) (*channelTargets, error) {
	if !policy.Spec.ChannelDriven() {
		conditions.Delete(policy, upgradev1.PolicyChannelCondition)
		return nil, nil
	}
	ct := &channelTargets{granted: map[string]int{}}
	ch := &upgradev1.ReleaseChannel{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: policy.Spec.Channel}, ch)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading ReleaseChannel %q: %w", policy.Spec.Channel, err)
	default:
		ct.channel = ch
	}
	return ct, nil
}

// channelTarget returns the Talos and Kubernetes targets of a Cluster of a
// channel's policy: the version its stage is granted. Talos is "" when the
// rollout is to stay as it is: the Cluster is in no stage, its stage has no
// version yet, or its rollout is at work on another version. For a version
// that names Kubernetes alone, the Cluster keeps the Talos its rollout
// targets, or else its Machines run.
func (r *Reconciler) channelTarget(ctx context.Context, ct *channelTargets, policy *upgradev1.TalosUpgradePolicy, cluster *clusterv1.Cluster, current *upgradev1.TalosUpgrade) (talosVersion, kubernetesVersion string, err error) {
	if ct.channel == nil {
		return "", "", nil
	}
	stage, ok := channel.StageOf(&ct.channel.Spec, upgradev1.PolicyReference{Namespace: policy.Namespace, Name: policy.Name}, cluster.Labels)
	if !ok {
		ct.unstaged++
		return "", "", nil
	}
	grant, ok := ct.channel.StageGrant(stage)
	if !ok {
		ct.ungranted++
		return "", "", nil
	}
	talosVersion, kubernetesVersion = grant.TalosVersion, grant.KubernetesVersion
	if current != nil && !current.Finished() && current.InProgress() && !onGrant(current, grant) {
		ct.held++
		return "", "", nil
	}
	if talosVersion == "" {
		if current != nil {
			talosVersion = current.Spec.TalosVersion
		}
		if talosVersion == "" {
			if talosVersion, err = r.runningTalos(ctx, cluster, false); err != nil {
				return "", "", err
			}
			ct.waitingForMachineOS = ct.waitingForMachineOS || talosVersion == ""
		}
	}
	if talosVersion != "" {
		ct.granted[stage+" grants "+grant.Version]++
	}
	return talosVersion, kubernetesVersion, nil
}

// onGrant reports whether a rollout targets a stage's grant already.
func onGrant(u *upgradev1.TalosUpgrade, grant upgradev1.ChannelStageStatus) bool {
	return (grant.TalosVersion == "" || talos.SameVersion(u.Spec.TalosVersion, grant.TalosVersion)) &&
		talos.SameVersion(cmp.Or(u.Spec.KubernetesVersion, "-"), cmp.Or(grant.KubernetesVersion, "-"))
}

// setChannelCondition sets the Channel condition of a channel's policy.
func setChannelCondition(policy *upgradev1.TalosUpgradePolicy, ct *channelTargets) {
	if ct == nil {
		return
	}
	c := metav1.Condition{Type: upgradev1.PolicyChannelCondition, Status: metav1.ConditionTrue, Reason: upgradev1.InChannelReason}
	if ct.channel == nil {
		c.Status, c.Reason = metav1.ConditionFalse, upgradev1.ChannelNotFoundReason
		c.Message = fmt.Sprintf("ReleaseChannel %q does not exist (yet): no Cluster of the policy gets a new version until it does", policy.Spec.Channel)
		conditions.Set(policy, c)
		return
	}
	var parts []string
	keys := make([]string, 0, len(ct.granted))
	for k := range ct.granted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("stage %s to %d Clusters", k, ct.granted[k]))
	}
	if ct.held > 0 {
		parts = append(parts, fmt.Sprintf("%d Clusters finish the rollout at work before they take their stage's version", ct.held))
	}
	if ct.ungranted > 0 {
		parts = append(parts, fmt.Sprintf("%d Clusters are in a stage no version entered yet", ct.ungranted))
	}
	if ct.unstaged > 0 {
		parts = append(parts, fmt.Sprintf("%d Clusters are in no stage of ReleaseChannel %s (or in several): name the policy in a stage, or select them with a stage's clusterSelector", ct.unstaged, policy.Spec.Channel))
	}
	if len(ct.granted) == 0 && ct.held == 0 && ct.ungranted == 0 && ct.unstaged > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, upgradev1.NotInStageReason
	}
	c.Message = strings.Join(parts, "; ")
	if c.Message == "" {
		c.Message = "no Cluster selects the policy"
	}
	conditions.Set(policy, c)
}

// channelToPolicies maps a channel to the policies that take their targets
// from it.
func (r *Reconciler) channelToPolicies(ctx context.Context, o client.Object) []ctrl.Request {
	list := &upgradev1.TalosUpgradePolicyList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{index.PolicyChannelField: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the policies of a ReleaseChannel", "ReleaseChannel", o.GetName())
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// grantsChanged passes the changes of a channel its policies act on: the
// versions its stages are granted and who is in which stage. The analyses'
// measurements, which change its status every interval, do not.
var grantsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*upgradev1.ReleaseChannel)
		n, ok2 := e.ObjectNew.(*upgradev1.ReleaseChannel)
		if !ok1 || !ok2 {
			return true
		}
		return !reflect.DeepEqual(grants(o), grants(n)) || !reflect.DeepEqual(o.Spec.Stages, n.Spec.Stages)
	},
}

// grants are the versions a channel's stages are granted.
func grants(ch *upgradev1.ReleaseChannel) map[string][2]string {
	g := make(map[string][2]string, len(ch.Status.Stages))
	for _, s := range ch.Status.Stages {
		g[s.Name] = [2]string{s.TalosVersion, s.KubernetesVersion}
	}
	return g
}
