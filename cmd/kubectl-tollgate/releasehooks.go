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
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// maxReasonLength is the longest --reason: the length status.bypassHistory
// keeps of a reason.
const maxReasonLength = 256

// releaseOptions are the flags of release-hooks.
type releaseOptions struct {
	// reason is why the hooks are released, recorded with who asked.
	reason string
	// yes releases them; without it the command is a dry run.
	yes bool
	// leaseName and leaseNamespace name the leader election Lease of the
	// Tollgate manager that serves the Cluster (every namespace when
	// leaseNamespace is empty).
	leaseName, leaseNamespace string
}

func newReleaseHooksCommand(o *options) *cobra.Command {
	r := &releaseOptions{}
	cmd := &cobra.Command{
		Use:   "release-hooks CLUSTER --reason REASON [--yes]",
		Short: "Break glass: release Tollgate's deletion hook from a Cluster's Machines while Tollgate is not running",
		Long: "Tollgate keeps CAPI's pre-drain deletion hook " + hooks.DeletionHookAnnotation + " on every Machine of a Cluster " +
			"that opts in to a policy, and only Tollgate removes it: while Tollgate is down or uninstalled, every deletion CAPI makes " +
			"of such a Machine (a scale-down, a MachineDeployment rollout, a MachineHealthCheck remediation, a user's kubectl delete) " +
			"waits before the drain. release-hooks removes that hook, and no other owner's, from every Machine of CLUSTER, so that " +
			"those deletions go on without Tollgate's gate (no preRemoval hook, no health check, no budget).\n\n" +
			"It is audited: --reason is required, and before it releases anything it records who asked (the user the API server " +
			"authenticated), when and why in a Warning event DeletionHooksReleased on the Cluster and in status.bypassHistory of the " +
			"Cluster's TalosUpgrade, where Tollgate keeps its bypasses. Without --yes it is a dry run: it says what it would release " +
			"and changes nothing.\n\n" +
			"It refuses while Tollgate runs (its leader election Lease, " + defaultLeaderElectionID + " in any namespace, is held and " +
			"renewed): a running Tollgate gates the removals itself, and puts its hook back on every Machine of an opted-in Cluster " +
			"that is not being deleted. Bypass the gate that is broken instead (kubectl tollgate bypass), or take the Cluster out of its " +
			"policy (remove its " + upgradev1.PolicyLabel + " label): Tollgate then releases its hooks itself. A Tollgate that runs but " +
			"does not act is stopped first (its Deployment scaled to 0); its Lease expires within its lease duration (15s by default).\n\n" +
			"A Machine released while it is being deleted stays released when Tollgate comes back; the others get the hook back " +
			"as long as their Cluster opts in. A Cluster's own deletion needs no release: CAPI does not wait for pre-drain hooks " +
			"when it deletes a whole Cluster.\n\n" +
			"It needs, besides reading Clusters, Machines and TalosUpgrades: patch on Machines, patch on talosupgrades/status, " +
			"create on events.k8s.io Events in the Cluster's namespace, list on Leases in every namespace (or the one of " +
			"--leader-election-namespace), and create on SelfSubjectReviews (every authenticated user may).",
		Example: "  kubectl tollgate release-hooks prod-eu-1 -n fleet --reason \"INC-4713: Tollgate is down, the MachineHealthCheck must replace prod-eu-1-md-0-x\"\n" +
			"  kubectl tollgate release-hooks prod-eu-1 -n fleet --reason \"INC-4713: Tollgate is down, the MachineHealthCheck must replace prod-eu-1-md-0-x\" --yes",
		Args: exactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if t.policy {
				return usagef("release-hooks takes a Cluster: the hooks are on its Machines, whatever their policy")
			}
			if err := r.validate(); err != nil {
				return err
			}
			return releaseHooks(cmd.Context(), o, r, t.name)
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.reason, "reason", "", "Why the hooks are released (required): recorded with who asked, in the event and in status.bypassHistory.")
	f.BoolVar(&r.yes, "yes", false, "Release the hooks; without it, say what would be released and change nothing.")
	f.StringVar(&r.leaseName, "leader-election-id", defaultLeaderElectionID, "The Lease of the Tollgate manager that serves the Cluster (its --leader-election-id; a shard's own).")
	f.StringVar(&r.leaseNamespace, "leader-election-namespace", "", "The namespace of that Lease; every namespace when empty.")
	return cmd
}

// validate checks the flags before anything is read.
func (r *releaseOptions) validate() error {
	switch {
	case strings.TrimSpace(r.reason) == "":
		return usagef("--reason is required: releasing the hooks takes Tollgate's removal gate away, and the reason is recorded with who asked")
	case utf8.RuneCountInString(r.reason) > maxReasonLength:
		return usagef("--reason is %d characters long: at most %d are kept; say the rest in the incident it names", utf8.RuneCountInString(r.reason), maxReasonLength)
	case r.leaseName == "":
		return usagef("--leader-election-id must name a Lease")
	}
	return nil
}

// clusterHooks is what release-hooks found on a Cluster's Machines.
type clusterHooks struct {
	// held are the Machines that carry Tollgate's deletion hook, by name.
	held []heldMachine
	// skipRemediation are the Machines that carry the skip-remediation
	// annotation Tollgate set during their upgrade (its record says so),
	// which release-hooks leaves: a MachineHealthCheck does not remediate
	// them until it is removed.
	skipRemediation []string
}

// heldMachine is a Machine that carries Tollgate's deletion hook.
type heldMachine struct {
	name string
	// deleting is true when CAPI deletes the Machine; since is when.
	deleting bool
	since    time.Time
	// waiting is true when CAPI's Machine controller says it waits for the
	// pre-drain hooks.
	waiting bool
}

// findHooks reads what Tollgate left on machines: its deletion hook, and
// the skip-remediation annotations its rollout u (nil when none) set.
func findHooks(machines []clusterv1.Machine, u *upgradev1.TalosUpgrade) clusterHooks {
	var found clusterHooks
	for i := range machines {
		m := &machines[i]
		if hooks.HasDeletionHook(m) {
			h := heldMachine{name: m.Name, deleting: !m.DeletionTimestamp.IsZero()}
			if h.deleting {
				h.since = m.DeletionTimestamp.Time
				c := conditions.Get(m, clusterv1.MachineDeletingCondition)
				h.waiting = c != nil && c.Reason == clusterv1.MachineDeletingWaitingForPreDrainHookReason
			}
			found.held = append(found.held, h)
		}
		if _, ok := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]; ok && u != nil && slices.ContainsFunc(u.Status.Machines, func(st upgradev1.MachineUpgradeStatus) bool {
			return st.Machine == m.Name && st.SkipRemediationSet
		}) {
			found.skipRemediation = append(found.skipRemediation, m.Name)
		}
	}
	slices.SortFunc(found.held, func(a, b heldMachine) int {
		if a.deleting != b.deleting {
			if a.deleting {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	slices.Sort(found.skipRemediation)
	return found
}

// names returns the names of the held Machines.
func (h clusterHooks) names() []string {
	names := make([]string, 0, len(h.held))
	for _, m := range h.held {
		names = append(names, m.name)
	}
	return names
}

// describe says what the hook does to m at now.
func (m heldMachine) describe(now time.Time) string {
	switch {
	case m.waiting:
		return fmt.Sprintf("deleting for %s: CAPI waits for the hook before it drains the Machine", roundSeconds(now.Sub(m.since)))
	case m.deleting:
		return fmt.Sprintf("deleting for %s", roundSeconds(now.Sub(m.since)))
	}
	return "not deleting: the hook would hold its next deletion"
}

// releaseHooks runs release-hooks for the Cluster named cluster.
func releaseHooks(ctx context.Context, o *options, r *releaseOptions, cluster string) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, cl); err != nil {
		if missingKind(err) {
			return fmt.Errorf("no Cluster %q in namespace %q", cluster, ns)
		}
		return fmt.Errorf("getting Cluster %s/%s: %w", ns, cluster, err)
	}
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster}); err != nil {
		return fmt.Errorf("listing the Machines of Cluster %s/%s: %w", ns, cluster, err)
	}
	u, err := findUpgrade(ctx, c, ns, cluster)
	switch {
	case missingKind(err):
		u = nil // Uninstalled with its CRDs, or no rollout: the event is the record.
	case err != nil:
		return err
	}
	found := findHooks(machines.Items, u)
	out := o.streams.Out
	if len(found.held) == 0 {
		fprintf(out, "No Machine of Cluster %s/%s carries Tollgate's deletion hook (%s): nothing to release.\n", ns, cluster, hooks.DeletionHookAnnotation)
		writeNotes(o, ns, cl, found, false)
		return nil
	}
	leases, err := readLeases(ctx, c, r.leaseName, r.leaseNamespace)
	if err != nil {
		return err
	}
	now := time.Now()
	live := judgeLeases(leases, r.leaseName, r.leaseNamespace, now)
	if live.running {
		return fmt.Errorf("%s. It gates the removals of Cluster %s/%s itself, and would put its hook back on the Machines not being deleted: "+
			"see why a removal waits (kubectl tollgate describe -n %s), and bypass the gate that is broken (kubectl tollgate bypass %s -n %s "+
			"--health-checks, or --skip MACHINE/HOOK for a failed preRemoval hook); or take the Cluster out of its policy (remove its label %s): "+
			"Tollgate then releases its hooks itself. If Tollgate runs but does not act, stop it (scale its Deployment to 0) and run this again once its Lease expired",
			live.summary, ns, cluster, ns, cluster, ns, upgradev1.PolicyLabel)
	}
	fprintf(out, "%s.\n", live.summary)
	fprintf(out, "Machines of Cluster %s/%s that carry Tollgate's deletion hook (%s):\n", ns, cluster, hooks.DeletionHookAnnotation)
	width := 0
	for _, m := range found.held {
		width = max(width, len(m.name))
	}
	for _, m := range found.held {
		fprintf(out, "  %-*s  %s\n", width, m.name, m.describe(now))
	}
	if !cl.DeletionTimestamp.IsZero() {
		fprintf(out, "Cluster %s/%s is being deleted: CAPI does not wait for the pre-drain hooks of its Machines, so its deletion needs no release.\n", ns, cluster)
	}
	if !r.yes {
		fprintf(out, "Dry run: nothing was changed. Run again with --yes to release the hooks of %d Machine(s), recorded %s.\n", len(found.held), recordPlaces(ns, cluster, u))
		writeNotes(o, ns, cl, found, false)
		return nil
	}
	who, err := whoAmI(ctx, c)
	if err != nil {
		return err
	}
	bg := breakGlass{who: who, reason: r.reason, cluster: cl, upgrade: u, machines: found.names(), tollgate: live.summary, now: now}
	if err := recordBreakGlass(ctx, c, bg); err != nil {
		return fmt.Errorf("%w; nothing was released", err)
	}
	var failed []string
	for _, name := range found.names() {
		m := &clusterv1.Machine{}
		m.Namespace, m.Name = ns, name
		switch err := hooks.ReleaseDeletionHook(ctx, c, m); {
		case apierrors.IsNotFound(err):
			fprintf(out, "machine.cluster.x-k8s.io/%s gone\n", name)
		case err != nil:
			fprintf(o.streams.ErrOut, "error: %v\n", err)
			failed = append(failed, name)
		default:
			fprintf(out, "machine.cluster.x-k8s.io/%s released\n", name)
		}
	}
	fprintf(out, "Recorded %s: by %s: %q.\n", recordPlaces(ns, cluster, u), who, r.reason)
	writeNotes(o, ns, cl, found, true)
	if len(failed) > 0 {
		return fmt.Errorf("the hook of %d Machine(s) was not released (%s): run the command again", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// recordPlaces says where release-hooks records a release.
func recordPlaces(ns, cluster string, u *upgradev1.TalosUpgrade) string {
	where := fmt.Sprintf("in a Warning event %s on Cluster %s/%s", eventReason, ns, cluster)
	if u != nil {
		where += fmt.Sprintf(" and in status.bypassHistory of TalosUpgrade %s/%s", u.Namespace, u.Name)
	}
	return where
}

// writeNotes says what else of Tollgate's holds the Cluster's Machines, and
// what a Tollgate that comes back does.
func writeNotes(o *options, ns string, cl *clusterv1.Cluster, found clusterHooks, released bool) {
	for _, name := range found.skipRemediation {
		fprintf(o.streams.Out, "Note: Machine %s keeps the annotation %s, which Tollgate set during its upgrade: no MachineHealthCheck remediates it "+
			"until it is removed (kubectl annotate machine -n %s %s %s-); its node may also be cordoned.\n",
			name, clusterv1.MachineSkipRemediationAnnotation, ns, name, clusterv1.MachineSkipRemediationAnnotation)
	}
	if !released {
		return
	}
	if policy := cl.Labels[upgradev1.PolicyLabel]; policy != "" && cl.DeletionTimestamp.IsZero() {
		fprintf(o.streams.Out, "Cluster %s/%s still opts in to policy %q: a running Tollgate puts its hook back on every Machine of it that is not being deleted.\n",
			ns, cl.Name, policy)
	}
}
