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
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// targetHelp is how the control commands name what they change.
const targetHelp = "TARGET is a Cluster (CLUSTER or cluster/CLUSTER: its TalosUpgrade) or a policy (policy/POLICY)."

// target is what a control command changes: the rollout of a Cluster (its
// TalosUpgrade) or a TalosUpgradePolicy.
type target struct {
	// policy is true for a TalosUpgradePolicy, false for a Cluster.
	policy bool
	// name is the policy's or the Cluster's name.
	name string
}

// parseTarget reads CLUSTER, cluster/CLUSTER or policy/POLICY.
func parseTarget(arg string) (target, error) {
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		kind, name = "cluster", arg
	}
	if name == "" || strings.Contains(name, "/") {
		return target{}, usagef("%q is not a target: %s", arg, targetHelp)
	}
	switch strings.ToLower(kind) {
	case "cluster", "clusters", "cl":
		return target{name: name}, nil
	case "policy", "policies", "talosupgradepolicy", "talosupgradepolicies", "tup":
		return target{policy: true, name: name}, nil
	}
	return target{}, usagef("%q is not a target (unknown kind %q): %s", arg, kind, targetHelp)
}

// findUpgrade returns the TalosUpgrade of a Cluster: the one named after it
// (the policy controller's), else the one of those whose spec.clusterName
// names it that is not finished, else the newest.
func findUpgrade(ctx context.Context, c client.Reader, namespace, cluster string) (*upgradev1.TalosUpgrade, error) {
	u := &upgradev1.TalosUpgrade{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, u)
	switch {
	case err == nil && u.Spec.ClusterName == cluster:
		return u, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("getting TalosUpgrade %s/%s: %w", namespace, cluster, err)
	}
	list := &upgradev1.TalosUpgradeList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the TalosUpgrades of namespace %q: %w", namespace, err)
	}
	var found *upgradev1.TalosUpgrade
	for i := range list.Items {
		if list.Items[i].Spec.ClusterName == cluster && shows(&list.Items[i], found) {
			found = &list.Items[i]
		}
	}
	if found == nil {
		return nil, apierrors.NewNotFound(upgradev1.GroupVersion.WithResource("talosupgrades").GroupResource(), cluster)
	}
	return found, nil
}

// notFoundHint adds what to do to a NotFound error of a target.
func notFoundHint(err error, t target, namespace string) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	if t.policy {
		return fmt.Errorf("no TalosUpgradePolicy %q in namespace %q (kubectl tollgate describe -A lists the policies)", t.name, namespace)
	}
	return fmt.Errorf("no TalosUpgrade for Cluster %q in namespace %q: a Cluster labelled %s=<policy> gets one from its policy (kubectl tollgate describe lists the rollouts)",
		t.name, namespace, upgradev1.PolicyLabel)
}
