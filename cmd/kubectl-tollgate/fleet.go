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

package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

// objectKey names a namespaced object.
type objectKey struct{ namespace, name string }

// fleetReader assembles the fleet the tree shows from the objects of a
// namespace (every namespace when empty).
type fleetReader struct {
	c         client.Reader
	namespace string
	// policy keeps only that policy, its Clusters and rollouts, when set.
	policy string

	// trees are the policies found so far, by namespace and name.
	trees map[objectKey]*rolloutview.PolicyTree
	// rollouts are, per policy, its rollouts by Cluster name.
	rollouts map[objectKey]map[string]*rolloutview.Rollout
}

// readFleet reads the TalosUpgradePolicies of namespace (every namespace
// when ""), the Clusters that carry their label, the TalosUpgrades that come
// from them and the holds on the Machines of those Clusters. A Cluster or
// TalosUpgrade whose policy does not exist is shown under a policy line
// that says so. With policy set, only that policy is read; it is an error
// when nothing names it.
func readFleet(ctx context.Context, c client.Reader, namespace, policy string) (rolloutview.Fleet, error) {
	r := &fleetReader{
		c: c, namespace: namespace, policy: policy,
		trees: map[objectKey]*rolloutview.PolicyTree{}, rollouts: map[objectKey]map[string]*rolloutview.Rollout{},
	}
	if err := r.read(ctx); err != nil {
		return rolloutview.Fleet{}, err
	}
	f := rolloutview.Fleet{}
	for k, t := range r.trees {
		for _, ro := range r.rollouts[k] {
			t.Rollouts = append(t.Rollouts, *ro)
		}
		slices.SortFunc(t.Rollouts, func(a, b rolloutview.Rollout) int { return cmp.Compare(a.Cluster, b.Cluster) })
		f.Policies = append(f.Policies, *t)
	}
	slices.SortFunc(f.Policies, func(a, b rolloutview.PolicyTree) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if policy != "" && len(f.Policies) == 0 {
		return f, fmt.Errorf("no TalosUpgradePolicy %q in namespace %q, and no Cluster or TalosUpgrade names it", policy, namespace)
	}
	return f, nil
}

func (r *fleetReader) read(ctx context.Context) error {
	policies := &upgradev1.TalosUpgradePolicyList{}
	if err := r.c.List(ctx, policies, client.InNamespace(r.namespace)); err != nil {
		return fmt.Errorf("listing TalosUpgradePolicies: %w", err)
	}
	for i := range policies.Items {
		p := &policies.Items[i]
		if t := r.tree(p.Namespace, p.Name); t != nil {
			t.Policy = p
		}
	}
	clusters := metadataList(clusterv1.GroupVersion.WithKind("ClusterList"))
	if err := r.c.List(ctx, clusters, client.InNamespace(r.namespace), client.HasLabels{upgradev1.PolicyLabel}); err != nil && !missingKind(err) {
		return fmt.Errorf("listing the Clusters that carry %s: %w", upgradev1.PolicyLabel, err)
	}
	for i := range clusters.Items {
		cl := &clusters.Items[i]
		r.rollout(cl.Namespace, cl.Labels[upgradev1.PolicyLabel], cl.Name)
	}
	upgrades := &upgradev1.TalosUpgradeList{}
	if err := r.c.List(ctx, upgrades, client.InNamespace(r.namespace)); err != nil {
		return fmt.Errorf("listing TalosUpgrades: %w", err)
	}
	for i := range upgrades.Items {
		u := &upgrades.Items[i]
		if ro := r.rollout(u.Namespace, u.Spec.PolicyName, u.Spec.ClusterName); ro != nil && shows(u, ro.Upgrade) {
			ro.Upgrade = u
		}
	}
	return r.readHolds(ctx)
}

// readHolds reads the hold annotations of the Machines of the Clusters
// shown.
func (r *fleetReader) readHolds(ctx context.Context) error {
	machines := metadataList(clusterv1.GroupVersion.WithKind("MachineList"))
	if err := r.c.List(ctx, machines, client.InNamespace(r.namespace), client.HasLabels{clusterv1.ClusterNameLabel}); err != nil && !missingKind(err) {
		return fmt.Errorf("listing Machines: %w", err)
	}
	holds := map[objectKey]map[string][]rolloutview.Hold{}
	for i := range machines.Items {
		m := &machines.Items[i]
		k := objectKey{m.Namespace, m.Labels[clusterv1.ClusterNameLabel]}
		if holds[k] == nil {
			holds[k] = map[string][]rolloutview.Hold{}
		}
		if h := rolloutview.HoldsOf(m); len(h) > 0 {
			holds[k][m.Name] = h
		}
	}
	for _, byCluster := range r.rollouts {
		for _, ro := range byCluster {
			ro.Holds = holds[objectKey{ro.Namespace, ro.Cluster}]
		}
	}
	return nil
}

// tree returns the policy's tree, made when first asked for; nil for a
// policy the reader leaves out.
func (r *fleetReader) tree(namespace, name string) *rolloutview.PolicyTree {
	if r.policy != "" && name != r.policy {
		return nil
	}
	k := objectKey{namespace, name}
	if r.trees[k] == nil {
		r.trees[k] = &rolloutview.PolicyTree{Namespace: namespace, Name: name}
		r.rollouts[k] = map[string]*rolloutview.Rollout{}
	}
	return r.trees[k]
}

// rollout returns a Cluster's rollout under a policy, made when first
// asked for; nil for a policy the reader leaves out.
func (r *fleetReader) rollout(namespace, policy, cluster string) *rolloutview.Rollout {
	if r.tree(namespace, policy) == nil {
		return nil
	}
	byCluster := r.rollouts[objectKey{namespace, policy}]
	if byCluster[cluster] == nil {
		byCluster[cluster] = &rolloutview.Rollout{Namespace: namespace, Cluster: cluster}
	}
	return byCluster[cluster]
}

// shows reports whether u, rather than the TalosUpgrade shown so far for
// its Cluster, is the one to show: the one that is not finished, else the
// newest.
func shows(u, shown *upgradev1.TalosUpgrade) bool {
	switch {
	case shown == nil:
		return true
	case u.Finished() != shown.Finished():
		return !u.Finished()
	}
	return shown.CreationTimestamp.Before(&u.CreationTimestamp)
}

// metadataList is a list of the metadata of objects of a kind: the plugin
// reads no more of Clusters and Machines than their names, labels and
// annotations.
func metadataList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk)
	return l
}

// missingKind reports whether err says the API server does not serve a
// kind (CAPI not installed, or not that version): there are no such
// objects to show.
func missingKind(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}
