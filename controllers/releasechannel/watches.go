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

package releasechannel

import (
	"context"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

// What brings a channel back, besides its own spec: the rollouts of its
// Clusters (a stage completes or fails), its policies (one joins or leaves,
// or moves to another channel) and the labels of Clusters (a clusterSelector
// starts or stops selecting one, a Cluster moves to another policy). Each
// event is mapped to the channel it concerns through the caches; none is a
// request to the apiserver.

// upgradeToChannel maps a TalosUpgrade to the channel of its policy.
func (r *Reconciler) upgradeToChannel(ctx context.Context, o client.Object) []ctrl.Request {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok || u.Spec.PolicyName == "" || !u.Spec.ChannelDriven() {
		return nil
	}
	return r.policyChannel(ctx, client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.PolicyName})
}

// clusterToChannel maps a Cluster to the channel of the policy it opts in
// to.
func (r *Reconciler) clusterToChannel(ctx context.Context, o client.Object) []ctrl.Request {
	name := o.GetLabels()[upgradev1.PolicyLabel]
	if name == "" {
		return nil
	}
	return r.policyChannel(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name})
}

// policyChannel returns the requests of the channels of a policy (see
// policyToChannels).
func (r *Reconciler) policyChannel(ctx context.Context, key client.ObjectKey) []ctrl.Request {
	p := &upgradev1.TalosUpgradePolicy{}
	if err := r.Client.Get(ctx, key, p); err != nil {
		if client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the policy of a rollout or a Cluster", "TalosUpgradePolicy", klog.KRef(key.Namespace, key.Name))
		}
		return nil
	}
	return r.policyToChannels(ctx, p)
}

// policyToChannels maps a policy to the channel it takes its target from
// and to the channels whose stages name it: a policy a stage waits for
// (created, or made to take its target from the channel) resolves it. A
// policy's old channel is mapped too, from the old object of an update.
func (r *Reconciler) policyToChannels(ctx context.Context, o client.Object) []ctrl.Request {
	p, ok := o.(*upgradev1.TalosUpgradePolicy)
	if !ok {
		return nil
	}
	var reqs []ctrl.Request
	if p.Spec.ChannelDriven() && p.Spec.Channel != "" {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Name: p.Spec.Channel}})
	}
	channels := &upgradev1.ReleaseChannelList{}
	if err := r.Client.List(ctx, channels, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ReleaseChannels a policy may be in", "TalosUpgradePolicy", klog.KObj(p))
		return reqs
	}
	ref := upgradev1.PolicyReference{Namespace: p.Namespace, Name: p.Name}
	for i := range channels.Items {
		if c := &channels.Items[i]; c.Name != p.Spec.Channel && channel.NamesPolicy(&c.Spec, ref) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Name: c.Name}})
		}
	}
	return reqs
}

// rolloutMoved passes the changes of a TalosUpgrade that a channel judges:
// its targets, its phase, whether it is finished or in progress, and when
// it completed. A rollout's many status writes in between (every Machine's
// phase) do not wake the channel.
var rolloutMoved = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*upgradev1.TalosUpgrade)
		n, ok2 := e.ObjectNew.(*upgradev1.TalosUpgrade)
		if !ok1 || !ok2 {
			return true
		}
		return o.Spec.TalosVersion != n.Spec.TalosVersion || o.Spec.KubernetesVersion != n.Spec.KubernetesVersion ||
			o.Status.Phase != n.Status.Phase || o.Finished() != n.Finished() || o.InProgress() != n.InProgress() ||
			!apiequality.Semantic.DeepEqual(o.Status.CompletionTime, n.Status.CompletionTime)
	},
}

// clusterLabelsChanged passes the creation and deletion of Clusters and the
// changes of their labels: what stage membership depends on.
var clusterLabelsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		_, ok := e.ObjectNew.(*clusterv1.Cluster)
		return !ok || !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	},
}
