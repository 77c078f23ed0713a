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
	"time"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

func newDescribeCommand(o *options) *cobra.Command {
	grouping := true
	cmd := &cobra.Command{
		Use:   "describe [POLICY]",
		Short: "Show the fleet as a tree: policies, their Clusters, their Machines",
		Long: "Show every TalosUpgradePolicy of the namespace (or only POLICY) as a tree, like clusterctl describe cluster: " +
			"below a policy its Clusters with their rollout's phase, progress and what blocks it; below a Cluster its bypass, " +
			"health checks and Machines, each with its phase, how long it has been in it, what it waits for and the holds " +
			"present on it that the rollout has not reached; below a Machine its hooks that did not succeed.",
		Example: "  kubectl tollgate describe -n fleet\n" +
			"  kubectl tollgate describe talos-1-13 --grouping=false\n" +
			"  kubectl tollgate describe -A",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("expected at most one POLICY, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			policy := ""
			if len(args) == 1 {
				policy = args[0]
			}
			return describe(cmd, o, policy, grouping)
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Show the policies of every namespace.")
	cmd.Flags().BoolVar(&grouping, "grouping", true,
		"Show the Completed Machines of a Cluster on one line, and its Pending ones on another, when none of them needs a look; "+
			"--grouping=false gives every Machine its own line, with the hooks that succeeded.")
	return cmd
}

func describe(cmd *cobra.Command, o *options, policy string, grouping bool) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	fleet, err := readFleet(cmd.Context(), c, ns, policy)
	if err != nil {
		return err
	}
	if len(fleet.Policies) == 0 {
		where := "in namespace " + ns
		if ns == "" {
			where = "in any namespace"
		}
		fprintf(o.streams.ErrOut, "No TalosUpgradePolicy, and no Cluster labelled with one, %s.\n", where)
		return nil
	}
	tty, width := terminal(o.streams.Out)
	rolloutview.WriteTree(o.streams.Out, fleet, time.Now(), rolloutview.TreeOptions{
		AllNamespaces: ns == "",
		Grouping:      grouping,
		Color:         tty && colored(),
		Width:         width,
	})
	return nil
}
