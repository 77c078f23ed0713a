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

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// controls are the fields of a TalosUpgrade or a policy that a user may
// change, as pointers into the object.
type controls struct {
	// paused is spec.paused.
	paused *bool
	// cancel is spec.cancel; nil on a policy, which has none.
	cancel *bool
	// bypass is spec.bypass.
	bypass **upgradev1.BypassSpec
}

func newPauseCommand(o *options, pause bool) *cobra.Command {
	name, verb, short, long := "pause", "paused", "Stop a rollout, or every rollout of a policy, from starting new Machines",
		"Set spec.paused: no new Machine starts; Machines already started finish. resume undoes it."
	if !pause {
		name, verb, short, long = "resume", "resumed", "Let a paused rollout, or the rollouts of a paused policy, start Machines again",
			"Set spec.paused back to false. This is also how a rollout paused by its failurePolicy (action: Pause) goes on."
	}
	return &cobra.Command{
		Use:     name + " TARGET",
		Short:   short,
		Long:    long + "\n\n" + targetHelp,
		Example: "  kubectl tollgate " + name + " prod-eu-1 -n fleet\n  kubectl tollgate " + name + " policy/talos-1-13 -n fleet",
		Args:    exactArgs("TARGET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			obj, changed, err := change(cmd.Context(), o, t, func(c controls) error {
				*c.paused = pause
				return nil
			})
			if err == nil {
				report(o, obj, changed, verb)
			}
			return err
		},
	}
}

func newCancelCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel CLUSTER",
		Short: "End a Cluster's rollout for good",
		Long: "Set spec.cancel on the Cluster's TalosUpgrade: no new Machine starts, Machines already started finish, and the " +
			"rollout ends Failed with reason RolloutCancelled. It cannot be undone: delete the TalosUpgrade to let its policy " +
			"start a new rollout. To stop a rollout for a while, pause it instead.",
		Example: "  kubectl tollgate cancel prod-eu-1 -n fleet",
		Args:    exactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if t.policy {
				return usagef("a policy cannot be cancelled, only its rollouts one by one: pause the policy, or cancel each Cluster's rollout")
			}
			obj, changed, err := change(cmd.Context(), o, t, func(c controls) error {
				*c.cancel = true
				return nil
			})
			if err == nil {
				report(o, obj, changed, "cancelled")
			}
			return err
		},
	}
}

// change applies mutate to the controls of t and patches what changed,
// retrying on a conflict with a write of the controller; the admission
// webhooks check the result and record who changed a bypass. It returns the
// object as the API server stored it, and whether anything changed.
func change(ctx context.Context, o *options, t target, mutate func(controls) error) (client.Object, bool, error) {
	c, err := o.client()
	if err != nil {
		return nil, false, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, false, err
	}
	var obj client.Object
	changed := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if obj, err = get(ctx, c, ns, t); err != nil {
			return err
		}
		orig := obj.DeepCopyObject().(client.Object)
		if err := mutate(controlsOf(obj)); err != nil {
			return err
		}
		if changed = !equality.Semantic.DeepEqual(orig, obj); !changed {
			return nil
		}
		return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return nil, false, notFoundHint(err, t, ns)
	}
	return obj, changed, nil
}

// report prints what a control command did the way kubectl does:
// "talosupgrade.upgrade.tollgate.dev/prod-eu-1 paused", or "unchanged".
func report(o *options, obj client.Object, changed bool, verb string) {
	if !changed {
		verb = "unchanged"
	}
	fprintf(o.streams.Out, "%s %s\n", resourceName(obj), verb)
}

// get reads the object t names: the Cluster's TalosUpgrade or the policy.
func get(ctx context.Context, c client.Reader, ns string, t target) (client.Object, error) {
	if !t.policy {
		return findUpgrade(ctx, c, ns, t.name)
	}
	p := &upgradev1.TalosUpgradePolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.name}, p); err != nil {
		return nil, err
	}
	return p, nil
}

func controlsOf(obj client.Object) controls {
	switch o := obj.(type) {
	case *upgradev1.TalosUpgrade:
		return controls{paused: &o.Spec.Paused, cancel: &o.Spec.Cancel, bypass: &o.Spec.Bypass}
	case *upgradev1.TalosUpgradePolicy:
		return controls{paused: &o.Spec.Paused, bypass: &o.Spec.Bypass}
	}
	panic(fmt.Sprintf("no controls on %T", obj))
}

// resourceName is how kubectl names an object it changed:
// talosupgrade.upgrade.tollgate.dev/prod-eu-1.
func resourceName(obj client.Object) string {
	kind := "talosupgrade"
	if _, ok := obj.(*upgradev1.TalosUpgradePolicy); ok {
		kind = "talosupgradepolicy"
	}
	return fmt.Sprintf("%s.%s/%s", kind, upgradev1.GroupVersion.Group, obj.GetName())
}
