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
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

// watchOptions are the flags of watch.
type watchOptions struct {
	once, plain bool
	timeout     time.Duration
}

func newWatchCommand(o *options) *cobra.Command {
	w := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch CLUSTER",
		Short: "Show a Cluster's rollout live until it ends, then its summary",
		Long: "Show the rollout of CLUSTER live, as make demo does: a header with the rollout's phase, progress and what " +
			"blocks it, its bypass and health checks, then a line per Machine with its phase, progress, time and what it " +
			"waits for (the holds present on it included). On a terminal the view is redrawn in place; otherwise a line is " +
			"printed whenever one changes. When the rollout ends, a table gives each Machine's time in each phase.\n\n" +
			"Exits 0 when the rollout completed, 1 when it ended otherwise (Failed, cancelled, detached) or --timeout passed.",
		Example: "  kubectl tollgate watch prod-eu-1 -n fleet\n" +
			"  kubectl tollgate watch prod-eu-1 --once",
		Args: exactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return watchRollout(cmd.Context(), o, w, args[0])
		},
	}
	cmd.Flags().BoolVar(&w.once, "once", false, "Print the view once and exit.")
	cmd.Flags().BoolVar(&w.plain, "plain", false, "Print a line per change even on a terminal, instead of redrawing in place.")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 0, "Give up after this long (0: wait until the rollout ends or Ctrl-C).")
	return cmd
}

func watchRollout(ctx context.Context, o *options, w *watchOptions, cluster string) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	name := cluster
	switch u, err := findUpgrade(ctx, c, ns, cluster); {
	case err == nil:
		name = u.Name
	case !apierrors.IsNotFound(err):
		return err
	default:
		// No rollout yet: wait for one, if there is a Cluster to have one.
		cl := &metav1.PartialObjectMetadata{}
		cl.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, cl); err != nil {
			if apierrors.IsNotFound(err) || missingKind(err) {
				return fmt.Errorf("no Cluster %q and no TalosUpgrade for it in namespace %q", cluster, ns)
			}
			return fmt.Errorf("getting Cluster %s/%s: %w", ns, cluster, err)
		}
	}
	tty, width := terminal(o.streams.Out)
	if w.once {
		return watchOnce(ctx, o, c, ns, cluster, name, tty && colored())
	}
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	redraw := tty && !w.plain
	live := rolloutview.NewLive(o.streams.Out, rolloutview.LiveOptions{Redraw: redraw, Color: redraw && colored(), Start: time.Now(), Width: width})
	r, tl, err := rolloutview.Follow(ctx, c, rolloutview.FollowOptions{Namespace: ns, Cluster: cluster, Upgrade: name, Machines: true}, live)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the rollout did not end within --timeout %s (%s)", w.timeout, lastState(r))
	case errors.Is(err, context.Canceled):
		return nil // Ctrl-C: the view stays on screen.
	case err != nil:
		return err
	}
	fprintf(o.streams.Out, "\n")
	rolloutview.WriteSummary(o.streams.Out, r.Upgrade, tl)
	if r.Upgrade.Status.Phase != upgradev1.UpgradePhaseCompleted {
		fprintf(o.streams.ErrOut, "error: the rollout ended %s: %s\n", r.Upgrade.Status.Phase, r.Upgrade.Status.BlockedBy)
		return errSilent
	}
	return nil
}

// watchOnce prints the view of a rollout as it is now.
func watchOnce(ctx context.Context, o *options, c client.Reader, ns, cluster, name string, color bool) error {
	r := &rolloutview.Rollout{Namespace: ns, Cluster: cluster, Holds: map[string][]rolloutview.Hold{}}
	u := &upgradev1.TalosUpgrade{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); {
	case err == nil:
		r.Upgrade = u
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("getting TalosUpgrade %s/%s: %w", ns, name, err)
	}
	machines := metadataList(clusterv1.GroupVersion.WithKind("MachineList"))
	if err := c.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster}); err != nil && !missingKind(err) {
		return fmt.Errorf("listing the Machines of Cluster %s/%s: %w", ns, cluster, err)
	}
	for i := range machines.Items {
		r.Holds[machines.Items[i].Name] = rolloutview.HoldsOf(&machines.Items[i])
	}
	now := time.Now()
	tl := rolloutview.NewTimeline()
	tl.Observe(r.Upgrade, now)
	rolloutview.WriteFrame(o.streams.Out, r, tl, now, now, color)
	return nil
}

// lastState says where a rollout was when the watch gave up.
func lastState(r *rolloutview.Rollout) string {
	if r == nil || r.Upgrade == nil {
		return "no TalosUpgrade was created"
	}
	st := r.Upgrade.Status
	return fmt.Sprintf("phase %s, %s Machines, blocked by %q", st.Phase, st.Progress, st.BlockedBy)
}
