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

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultLeaderElectionID is the name of the Lease Tollgate's manager holds
// while it runs: the manager's default (cmd/manager.DefaultLeaderElectionID,
// --leader-election-id), which config/manager keeps.
const defaultLeaderElectionID = "tollgate-controller-leader"

// liveness is what the plugin tells of Tollgate's manager from its leader
// election Lease.
type liveness struct {
	// running is true while a manager holds the Lease and has renewed it
	// within its lease duration.
	running bool
	// summary says so, naming the Lease, its holder and its times.
	summary string
}

// readLeases lists the Leases named name in namespace, or in every
// namespace when namespace is empty.
func readLeases(ctx context.Context, c client.Reader, name, namespace string) ([]coordinationv1.Lease, error) {
	list := &coordinationv1.LeaseList{}
	opts := []client.ListOption{client.MatchingFields{"metadata.name": name}}
	where := "any namespace"
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
		where = "namespace " + namespace
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("cannot tell whether Tollgate is running: listing the Leases %q of %s: %w", name, where, err)
	}
	return list.Items, nil
}

// judgeLeases tells whether Tollgate's manager runs from its leader
// election Leases named name (one per namespace it runs in), at now: a
// Lease held and renewed within its duration is a manager that runs. A
// manager stopped or killed leaves its Lease held until the duration
// passes; one that stopped gracefully with the release on cancel clears
// the holder.
func judgeLeases(leases []coordinationv1.Lease, name, namespace string, now time.Time) liveness {
	if len(leases) == 0 {
		where := "in any namespace"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		return liveness{summary: fmt.Sprintf("Tollgate is not running: there is no Lease %q %s (a manager run without leader election "+
			"holds none, and a shard holds the Lease of its own --leader-election-id: name it with --leader-election-id)", name, where)}
	}
	leases = slices.Clone(leases)
	slices.SortFunc(leases, func(a, b coordinationv1.Lease) int { return strings.Compare(a.Namespace, b.Namespace) })
	var stopped []string
	for _, l := range leases {
		key := l.Namespace + "/" + l.Name
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		renewed := l.Spec.RenewTime
		if renewed == nil {
			renewed = l.Spec.AcquireTime
		}
		switch {
		case holder == "":
			stopped = append(stopped, fmt.Sprintf("Lease %s is held by no one", key))
		case renewed == nil:
			stopped = append(stopped, fmt.Sprintf("Lease %s, held by %s, was never renewed", key, holder))
		default:
			duration := 15 * time.Second
			if l.Spec.LeaseDurationSeconds != nil {
				duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			}
			ago := now.Sub(renewed.Time)
			expires := renewed.Add(duration)
			if now.Before(expires) {
				return liveness{running: true, summary: fmt.Sprintf("Tollgate is running: Lease %s is held by %s, renewed %s ago (it expires %s after its last renewal)",
					key, holder, roundSeconds(ago), duration)}
			}
			stopped = append(stopped, fmt.Sprintf("Lease %s, held by %s, was last renewed %s ago and expired %s ago", key, holder, roundSeconds(ago), roundSeconds(now.Sub(expires))))
		}
	}
	return liveness{summary: "Tollgate is not running: " + strings.Join(stopped, "; ")}
}

// roundSeconds prints d to the second, 0s at least.
func roundSeconds(d time.Duration) string {
	return max(d, 0).Round(time.Second).String()
}
