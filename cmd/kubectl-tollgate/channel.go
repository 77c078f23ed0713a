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

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

func newChannelCommand(o *options) *cobra.Command {
	versions := 3
	cmd := &cobra.Command{
		Use:   "channel [NAME]",
		Short: "Draw the pipeline of release channels: their stages and where each version stands",
		Long: "Show every ReleaseChannel (or only NAME, channels have no namespace): what its newest version waits for, its " +
			"stages in their order (stages side by side in braces), and a line per stage with its Clusters (those that " +
			"completed the version the stage is granted / all), that version, and where each of the latest versions stands " +
			"there: Rolling, Soaking until when with the analysis so far, WaitingForApproval, Passed (and who approved), Failed " +
			"(and why). Approve a version a stage waits for with kubectl tollgate approve.",
		Example: "  kubectl tollgate channel\n  kubectl tollgate channel talos-fleet --versions 5",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("expected at most one NAME, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			channels, err := readChannels(cmd.Context(), c, args)
			if err != nil {
				return err
			}
			if len(channels) == 0 {
				fprintf(o.streams.ErrOut, "No ReleaseChannel.\n")
				return nil
			}
			_, width := terminal(o.streams.Out)
			for i := range channels {
				if i > 0 {
					fprintf(o.streams.Out, "\n")
				}
				rolloutview.WriteChannel(o.streams.Out, &channels[i], time.Now(), rolloutview.ChannelOptions{Versions: versions, Width: width})
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&versions, "versions", versions, "How many of the latest versions get a column.")
	return cmd
}

// readChannels reads the channel named in args, or every channel.
func readChannels(ctx context.Context, c client.Reader, args []string) ([]upgradev1.ReleaseChannel, error) {
	if len(args) == 1 {
		ch := &upgradev1.ReleaseChannel{}
		if err := c.Get(ctx, client.ObjectKey{Name: args[0]}, ch); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("ReleaseChannel %q not found (kubectl tollgate channel lists them all)", args[0])
			}
			return nil, err
		}
		return []upgradev1.ReleaseChannel{*ch}, nil
	}
	list := &upgradev1.ReleaseChannelList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b upgradev1.ReleaseChannel) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// approveOptions are the flags of approve.
type approveOptions struct {
	reason, version string
	reject          bool
}

func newApproveCommand(o *options) *cobra.Command {
	a := &approveOptions{}
	cmd := &cobra.Command{
		Use:   "approve CHANNEL STAGE --reason REASON [--reject] [--version VERSION]",
		Short: "Approve (or reject) the version a stage of a release channel waits for, with a reason; the webhook records who",
		Long: "Add to spec.approvals of the ReleaseChannel the decision on the version STAGE waits for (it soaked there and " +
			"passed its analysis): --reason, which is required, says why (a change ticket, what was looked at); --reject " +
			"refuses the version, which halts it there. The admission webhook records who decided " +
			"(spec.approvals[].requestedBy, the user the API server authenticated) and refuses an approval for a stage that is " +
			"not waiting for one; the controller records the decision, who and why in status.versions[].stages[].approval, " +
			"and as an event. --version names the version when the plugin should not read it from the status. Approvals of " +
			"versions that ended are removed from the list as this one is added.",
		Example: "  kubectl tollgate approve talos-fleet prod --reason \"CHG-2042: dev's error ratio flat for a day\"\n" +
			"  kubectl tollgate approve talos-fleet prod --reject --reason \"INC-7: p99 up 40% in dev\"",
		Args: exactArgs("CHANNEL", "STAGE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(a.reason) == "" {
				return usagef("--reason is required: it is recorded with who decided")
			}
			return approve(cmd.Context(), o, args[0], args[1], a)
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.reason, "reason", "", "Why (required): recorded with who decided, in the status and an event.")
	f.BoolVar(&a.reject, "reject", false, "Refuse the version: the stage halts it.")
	f.StringVar(&a.version, "version", "", "The version the stage waits for (status.versions[].name); read from the status when unset.")
	return cmd
}

// approve adds the decision to the channel's approvals, retrying on a
// conflict with a write of the controller, and prints it as stored.
func approve(ctx context.Context, o *options, name, stage string, a *approveOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	decision := upgradev1.ApprovalApprove
	if a.reject {
		decision = upgradev1.ApprovalReject
	}
	ch := &upgradev1.ReleaseChannel{}
	var version string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, ch); err != nil {
			return err
		}
		if version, err = waitingVersion(ch, stage, a.version); err != nil {
			return err
		}
		orig := ch.DeepCopy()
		ch.Spec.Approvals = slices.DeleteFunc(ch.Spec.Approvals, func(x upgradev1.StageApproval) bool {
			return ended(ch, x.Version) || (x.Stage == stage && x.Version == version)
		})
		ch.Spec.Approvals = append(ch.Spec.Approvals, upgradev1.StageApproval{Stage: stage, Version: version, Decision: decision, Reason: a.reason})
		return c.Patch(ctx, ch, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("ReleaseChannel %q not found (kubectl tollgate channel lists them all)", name)
	}
	if err != nil {
		return err
	}
	verb := map[upgradev1.ApprovalDecision]string{upgradev1.ApprovalApprove: "approved", upgradev1.ApprovalReject: "rejected"}[decision]
	for _, x := range ch.Spec.Approvals {
		if x.Stage == stage && x.Version == version {
			fprintf(o.streams.Out, "releasechannel.%s/%s %s %s in stage %s; by %s: %q\n", upgradev1.GroupVersion.Group, name, verb, version, stage, x.RequestedBy, x.Reason)
		}
	}
	return nil
}

// waitingVersion returns the version stage waits for an approval of:
// version when set, else the one the status says; an error naming what
// the stage does when it waits for none.
func waitingVersion(ch *upgradev1.ReleaseChannel, stage, version string) (string, error) {
	if !slices.ContainsFunc(ch.Spec.Stages, func(s upgradev1.ChannelStage) bool { return s.Name == stage }) {
		names := make([]string, 0, len(ch.Spec.Stages))
		for _, s := range ch.Spec.Stages {
			names = append(names, s.Name)
		}
		return "", usagef("ReleaseChannel %s has no stage %q (its stages: %s)", ch.Name, stage, strings.Join(names, ", "))
	}
	if version != "" {
		return version, nil
	}
	var where []string
	for i := len(ch.Status.Versions) - 1; i >= 0; i-- {
		v := &ch.Status.Versions[i]
		for _, rec := range v.Stages {
			if rec.Stage != stage {
				continue
			}
			if rec.Phase == upgradev1.StageWaitingForApproval && (rec.Approval == nil || rec.Approval.Decision == "") {
				return v.Name, nil
			}
			where = append(where, fmt.Sprintf("%s is %s there", v.Name, rec.Phase))
		}
	}
	if len(where) == 0 {
		where = append(where, "no version reached it")
	}
	return "", fmt.Errorf("stage %s of ReleaseChannel %s is not waiting for an approval: %s", stage, ch.Name, strings.Join(where, "; "))
}

// ended reports whether a version of the channel ended, or is no more in
// its record: its approvals are history.
func ended(ch *upgradev1.ReleaseChannel, version string) bool {
	for _, v := range ch.Status.Versions {
		if v.Name == version {
			return v.Phase.Ended()
		}
	}
	return true
}
