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
	"slices"
	"strings"

	"github.com/spf13/cobra"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

// bypassOptions are the flags of bypass.
type bypassOptions struct {
	reason                           string
	healthChecks, maintenanceWindows bool
	holdOwners, retry, skip          []string
	clear                            bool
}

func newBypassCommand(o *options) *cobra.Command {
	b := &bypassOptions{}
	cmd := &cobra.Command{
		Use:   "bypass TARGET --reason REASON [--health-checks] [--maintenance-windows] [--hold-owner OWNER]... [--retry|--skip MACHINE/HOOK]...",
		Short: "Proceed past a safety gate that is itself broken, with a reason; the webhook records who asked",
		Long: "Add to spec.bypass of a Cluster's TalosUpgrade or of a policy: the gates named by the flags are bypassed " +
			"(in addition to those bypassed already) and --reason, which is required, replaces the bypass's reason. The " +
			"admission webhook records who asked (spec.bypass.requestedBy, the user the API server authenticated); the " +
			"Bypassed condition and an event per application say what, who and why, and the controller clears the bypass " +
			"when the rollout ends and no Machine CAPI deletes is held (a policy's when all its rollouts ended).\n\n" +
			"  --health-checks        proceed without waiting for the ClusterHealthChecks\n" +
			"  --maintenance-windows  run now: start Machines outside the maintenance windows (an urgent release)\n" +
			"  --hold-owner OWNER     pass the holds of an owner that is gone, at every point (the annotations stay)\n" +
			"  --retry MACHINE/HOOK   start a Machine its hook failed again, and run the hook once more (Cluster only)\n" +
			"  --skip MACHINE/HOOK    start it again, counting the failed hook as succeeded (Cluster only)\n\n" +
			"A Machine's retry or skip is applied once per change of the spec: to retry the same hook again after it failed " +
			"again, give a new --reason. On a Machine CAPI deletes whose preRemoval hook failed, --retry runs the hook once " +
			"more and --skip counts it as succeeded: its removal then goes on through the rest of its gate; --health-checks " +
			"lets removals pass failing checks too. --clear removes the bypass.\n\n" + targetHelp,
		Example: "  kubectl tollgate bypass prod-eu-1 --maintenance-windows --reason \"CVE-2026-1234: patch tonight\"\n" +
			"  kubectl tollgate bypass prod-eu-1 --retry prod-eu-1-cp-2/ceph-noout --reason \"INC-4711: ceph is healthy again\"\n" +
			"  kubectl tollgate bypass policy/talos-1-13 --hold-owner backup-operator --reason \"backup-operator was uninstalled\"\n" +
			"  kubectl tollgate bypass prod-eu-1 --clear",
		Args: exactArgs("TARGET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if err := b.validate(t); err != nil {
				return err
			}
			obj, changed, err := change(cmd.Context(), o, t, func(c controls) error {
				*c.bypass = b.apply(*c.bypass)
				return nil
			})
			if err != nil {
				return err
			}
			verb := "bypass cleared"
			if after := *controlsOf(obj).bypass; after.Any() {
				verb = "bypass: " + rolloutview.BypassText(after)
			}
			if u, ok := obj.(*upgradev1.TalosUpgrade); ok {
				warnNotFailed(o, u, b)
			}
			report(o, obj, changed, verb)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&b.reason, "reason", "", "Why the bypass is needed (required): shown with who asked in the events and the Bypassed condition.")
	f.BoolVar(&b.healthChecks, "health-checks", false, "Proceed without waiting for the ClusterHealthChecks.")
	f.BoolVar(&b.maintenanceWindows, "maintenance-windows", false, "Run now: start Machines outside the maintenance windows and on excluded dates.")
	f.StringArrayVar(&b.holdOwners, "hold-owner", nil, "Pass the holds of this owner (the <owner> of <point>.upgrade.hook.tollgate.dev/<owner>), at every point; repeatable.")
	f.StringArrayVar(&b.retry, "retry", nil, "MACHINE/HOOK: start the Machine its hook failed again, and run the hook once more; repeatable.")
	f.StringArrayVar(&b.skip, "skip", nil, "MACHINE/HOOK: start the Machine its hook failed again, counting the hook as succeeded; repeatable.")
	f.BoolVar(&b.clear, "clear", false, "Remove the bypass: every gate applies again.")
	return cmd
}

// validate checks the flags against what the API accepts, before asking
// the API server (whose webhook checks them again).
func (b *bypassOptions) validate(t target) error {
	gates := b.healthChecks || b.maintenanceWindows || len(b.holdOwners)+len(b.retry)+len(b.skip) > 0
	switch {
	case b.clear && (gates || b.reason != ""):
		return usagef("--clear removes the whole bypass: give it alone")
	case b.clear:
		return nil
	case !gates:
		return usagef("name a gate to bypass (--health-checks, --maintenance-windows, --hold-owner, --retry, --skip), or --clear")
	case strings.TrimSpace(b.reason) == "":
		return usagef("--reason is required: a bypass takes a safety gate away, and the reason is recorded with who asked")
	case t.policy && len(b.retry)+len(b.skip) > 0:
		return usagef("--retry and --skip name a Machine: bypass its hook on its Cluster (kubectl tollgate bypass CLUSTER), not on the policy")
	}
	for _, list := range [][]string{b.retry, b.skip} {
		for _, mh := range list {
			if _, _, err := splitMachineHook(mh); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply returns the bypass old with the flags' gates added and their
// reason, or nil with --clear. requestedBy is left for the webhook to write.
func (b *bypassOptions) apply(old *upgradev1.BypassSpec) *upgradev1.BypassSpec {
	if b.clear {
		return nil
	}
	nb := &upgradev1.BypassSpec{}
	if old != nil {
		nb = old.DeepCopy()
	}
	nb.HealthChecks = nb.HealthChecks || b.healthChecks
	nb.MaintenanceWindows = nb.MaintenanceWindows || b.maintenanceWindows
	for _, owner := range b.holdOwners {
		if !slices.Contains(nb.HoldOwners, owner) {
			nb.HoldOwners = append(nb.HoldOwners, owner)
		}
	}
	for _, mh := range b.retry {
		machine, hook, _ := splitMachineHook(mh)
		nb.Machines = setMachineBypass(nb.Machines, upgradev1.MachineBypass{Machine: machine, Hook: hook, Action: upgradev1.HookBypassRetry})
	}
	for _, mh := range b.skip {
		machine, hook, _ := splitMachineHook(mh)
		nb.Machines = setMachineBypass(nb.Machines, upgradev1.MachineBypass{Machine: machine, Hook: hook, Action: upgradev1.HookBypassSkip})
	}
	nb.Reason = b.reason
	return nb
}

// setMachineBypass sets the bypass of a Machine's hook in list (keyed by
// Machine and hook), keeping list's order.
func setMachineBypass(list []upgradev1.MachineBypass, mb upgradev1.MachineBypass) []upgradev1.MachineBypass {
	i := slices.IndexFunc(list, func(x upgradev1.MachineBypass) bool { return x.Machine == mb.Machine && x.Hook == mb.Hook })
	if i < 0 {
		return append(list, mb)
	}
	list[i] = mb
	return list
}

// splitMachineHook reads MACHINE/HOOK.
func splitMachineHook(s string) (machine, hook string, err error) {
	machine, hook, ok := strings.Cut(s, "/")
	if !ok || machine == "" || hook == "" || strings.Contains(hook, "/") {
		return "", "", usagef("%q is not MACHINE/HOOK (a Machine of the Cluster and the name of a hook of its plan, spec.hooks[].name)", s)
	}
	return machine, hook, nil
}

// warnNotFailed warns about a --retry or --skip of a hook that has not
// failed the Machine: the controller applies it only to a Machine its hook
// failed.
func warnNotFailed(o *options, u *upgradev1.TalosUpgrade, b *bypassOptions) {
	for _, mh := range append(slices.Clone(b.retry), b.skip...) {
		machine, hook, _ := splitMachineHook(mh)
		if r := slices.IndexFunc(u.Status.Removals, func(r upgradev1.MachineRemovalStatus) bool { return r.Machine == machine }); r >= 0 {
			rec := &u.Status.Removals[r]
			failed := rec.Phase == upgradev1.RemovalPhaseHeld && slices.ContainsFunc(rec.Hooks, func(h upgradev1.HookRunStatus) bool {
				return h.Name == hook && h.Phase == upgradev1.HookRunFailed
			})
			if !failed {
				fprintf(o.streams.ErrOut, "Warning: hook %q has not failed the removal of Machine %q (it is %s): the bypass applies if it does\n", hook, machine, rec.Phase)
			}
			continue
		}
		i := slices.IndexFunc(u.Status.Machines, func(m upgradev1.MachineUpgradeStatus) bool { return m.Machine == machine })
		if i < 0 {
			fprintf(o.streams.ErrOut, "Warning: TalosUpgrade %s/%s has no Machine %q: the bypass of its hook %q applies to nothing\n", u.Namespace, u.Name, machine, hook)
			continue
		}
		m := &u.Status.Machines[i]
		failed := m.Phase == upgradev1.MachinePhaseFailed && slices.ContainsFunc(m.Hooks, func(h upgradev1.HookRunStatus) bool {
			return h.Name == hook && h.Phase == upgradev1.HookRunFailed
		})
		if !failed {
			fprintf(o.streams.ErrOut, "Warning: hook %q has not failed Machine %q (it is %s): the bypass applies if it does\n", hook, machine, m.Phase)
		}
	}
}
