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
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
)

// members are the Clusters of a channel's stages, as one reconcile read
// them.
type members struct {
	// stages are the Clusters of each stage, by stage name, sorted.
	stages map[string][]member
	// unresolved are the policies each stage names that do not exist yet
	// or whose target does not come from the channel, by stage name.
	unresolved map[string][]string
	// problems stand in the way of the stages resolving: the Ready
	// condition.
	problems []problem
}

// member is a Cluster of a stage.
type member struct {
	// cluster is the CAPI Cluster.
	cluster client.ObjectKey
	// rollout is what its rollout says, for the plan.
	rollout channel.ClusterRollout
}

// problem is something the Ready condition reports.
type problem struct {
	reason, message string
}

// readMembers reads the Clusters of every stage: those of the policies
// that take their target from the channel (index.PolicyChannelField), each
// in the one stage that claims it (channel.StageOf), with its rollout. A
// stage that names a policy that does not exist, or whose target does not
// come from this channel, and a Cluster two stages claim, are problems, not
// errors: GitOps applies objects in any order.
func (r *Reconciler) readMembers(ctx context.Context, ch *upgradev1.ReleaseChannel) (members, error) {
	m := members{stages: map[string][]member{}, unresolved: map[string][]string{}}
	policies := &upgradev1.TalosUpgradePolicyList{}
	if err := r.Client.List(ctx, policies, client.MatchingFields{index.PolicyChannelField: ch.Name}); err != nil {
		return m, fmt.Errorf("listing the policies of ReleaseChannel %s: %w", ch.Name, err)
	}
	inChannel := map[upgradev1.PolicyReference]bool{}
	for i := range policies.Items {
		p := &policies.Items[i]
		inChannel[upgradev1.PolicyReference{Namespace: p.Namespace, Name: p.Name}] = true
	}
	for _, s := range ch.Spec.Stages {
		for _, ref := range s.Policies {
			if !inChannel[ref] {
				if err := r.reportPolicy(ctx, ch, s.Name, ref, &m); err != nil {
					return m, err
				}
				m.unresolved[s.Name] = append(m.unresolved[s.Name], ref.String())
			}
		}
	}
	var ambiguous []string
	for i := range policies.Items {
		p := &policies.Items[i]
		ref := upgradev1.PolicyReference{Namespace: p.Namespace, Name: p.Name}
		clusters, err := r.clustersOf(ctx, p)
		if err != nil {
			return m, err
		}
		for j := range clusters {
			c := &clusters[j]
			claims := channel.Claims(&ch.Spec, ref, c.Labels)
			switch len(claims) {
			case 0:
				continue
			case 1:
			default:
				ambiguous = append(ambiguous, fmt.Sprintf("%s/%s (stages %s)", c.Namespace, c.Name, strings.Join(claims, ", ")))
				continue
			}
			rollout, err := r.rolloutOf(ctx, p, c)
			if err != nil {
				return m, err
			}
			m.stages[claims[0]] = append(m.stages[claims[0]], member{cluster: client.ObjectKeyFromObject(c), rollout: rollout})
		}
	}
	if len(ambiguous) > 0 {
		sort.Strings(ambiguous)
		m.problems = append(m.problems, problem{upgradev1.ClusterInSeveralStagesReason, fmt.Sprintf(
			"%d Clusters are claimed by several stages and get no new version until one claims them: %s; make the stages' clusterSelectors exclusive, or name the policy in one stage only",
			len(ambiguous), strings.Join(first(ambiguous, 5), "; "))})
	}
	for name := range m.stages {
		slices.SortFunc(m.stages[name], func(a, b member) int { return strings.Compare(a.rollout.Name, b.rollout.Name) })
	}
	return m, nil
}

// reportPolicy says why a policy a stage names has no Clusters in it: it
// does not exist (yet), or its target does not come from this channel.
func (r *Reconciler) reportPolicy(ctx context.Context, ch *upgradev1.ReleaseChannel, stage string, ref upgradev1.PolicyReference, m *members) error {
	p := &upgradev1.TalosUpgradePolicy{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, p)
	switch {
	case apierrors.IsNotFound(err):
		m.problems = append(m.problems, problem{upgradev1.PolicyNotFoundReason, fmt.Sprintf(
			"stage %s names TalosUpgradePolicy %s, which does not exist (yet): its Clusters join the stage once it does", stage, ref)})
	case err != nil:
		return fmt.Errorf("reading TalosUpgradePolicy %s: %w", ref, err)
	default:
		m.problems = append(m.problems, problem{upgradev1.PolicyNotInChannelReason, fmt.Sprintf(
			"stage %s names TalosUpgradePolicy %s, whose target does not come from this channel: set targetFrom: Channel and channel: %s on it", stage, ref, ch.Name)})
	}
	return nil
}

// clustersOf lists the Clusters of a policy (of this manager's shard).
func (r *Reconciler) clustersOf(ctx context.Context, p *upgradev1.TalosUpgradePolicy) ([]clusterv1.Cluster, error) {
	opts := []client.ListOption{client.InNamespace(p.Namespace), client.MatchingFields{index.ClusterPolicyField: p.Name}}
	if r.WatchFilterValue != "" {
		opts = append(opts, client.MatchingLabels{clusterv1.WatchLabel: r.WatchFilterValue})
	}
	list := &clusterv1.ClusterList{}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing the Clusters of TalosUpgradePolicy %s: %w", klog.KObj(p), err)
	}
	return list.Items, nil
}

// rolloutOf reads the rollout of a Cluster of policy p: its TalosUpgrade,
// when it is the policy's (a rollout of a policy the Cluster moved from is
// none of the channel's).
func (r *Reconciler) rolloutOf(ctx context.Context, p *upgradev1.TalosUpgradePolicy, c *clusterv1.Cluster) (channel.ClusterRollout, error) {
	out := channel.ClusterRollout{Name: c.Namespace + "/" + c.Name}
	u := &upgradev1.TalosUpgrade{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), u); err != nil {
		if apierrors.IsNotFound(err) {
			return out, nil
		}
		return out, fmt.Errorf("reading the TalosUpgrade of Cluster %s: %w", klog.KObj(c), err)
	}
	if u.Spec.PolicyName != p.Name {
		return out, nil
	}
	out.HasRollout = true
	out.Talos, out.Kubernetes = u.Spec.TalosVersion, u.Spec.KubernetesVersion
	out.Finished, out.InProgress, out.Phase = u.Finished(), u.InProgress(), u.Status.Phase
	if t := u.Status.CompletionTime; t != nil {
		out.CompletionTime = t.Time
	}
	return out, nil
}

// world is what the plan reads of the stages: their Clusters and whether
// their windows are open at now.
func (m members) world(ch *upgradev1.ReleaseChannel, now time.Time) map[string]channel.StageWorld {
	world := make(map[string]channel.StageWorld, len(ch.Spec.Stages))
	for _, s := range ch.Spec.Stages {
		w := channel.StageWorld{WindowOpen: true, Unresolved: m.unresolved[s.Name]}
		for _, mem := range m.stages[s.Name] {
			w.Clusters = append(w.Clusters, mem.rollout)
		}
		if s.Window != nil {
			w.WindowOpen, w.WindowOpens = maintenance.Open(s.Window, now)
			w.Window = maintenance.Describe(s.Window)
		}
		world[s.Name] = w
	}
	return world
}

func first(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}
