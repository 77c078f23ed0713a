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

package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// nodeInfoTimeout bounds how long the demo waits for CAPI to copy the
// Nodes' new OS into the Machines once the rollout completed.
const nodeInfoTimeout = 30 * time.Second

// followCAPIDriven follows a CAPI-driven rollout until CAPI has updated
// every one of the workers to version in place. The Cluster's TalosUpgrade
// takes only the Machines CAPI handed over: it finishes each time those are
// done, and goes on when CAPI hands over the next, after it ended the
// update of the last. So the view is followed again until CAPI says it is
// done: no Machine of the MachineDeployment still being updated, every one
// up to date and its Node on version.
func followCAPIDriven(version string, workers int) follower {
	return func(ctx context.Context, sb *sandbox.Sandbox, timeout time.Duration, live *rolloutview.Live) (*followed, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var checksHeld time.Duration
		for {
			f, err := followOnce(ctx, sb, live)
			if err != nil {
				return nil, err
			}
			checksHeld += f.checksHeld
			f.checksHeld = checksHeld
			// Until CAPI hands over the next Machine, or says it is done.
			for {
				done, why, err := capiUpdated(ctx, sb.Management.Client, version, workers)
				if err != nil {
					return nil, err
				}
				if done {
					return f, nil
				}
				if u, err := sb.Upgrade(ctx, namespace, clusterName); err == nil && !u.Finished() {
					break
				}
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("CAPI did not update every worker in place in time (%s): %w", why, ctx.Err())
				case <-tick.C: // Polling what CAPI writes, between two hand-overs.
				}
			}
		}
	}
}

// capiUpdated says whether CAPI has updated every worker of the Cluster to
// version in place, and otherwise what it still does.
func capiUpdated(ctx context.Context, c client.Client, version string, workers int) (bool, string, error) {
	md := &clusterv1.MachineDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sandbox.WorkersName(clusterName)}, md); err != nil {
		return false, "", fmt.Errorf("reading MachineDeployment %s/%s: %w", namespace, sandbox.WorkersName(clusterName), err)
	}
	if upToDate := ptr.Deref(md.Status.UpToDateReplicas, 0); upToDate != int32(workers) { //nolint:gosec // A handful of Machines.
		return false, fmt.Sprintf("MachineDeployment %s has %d of %d Machines up to date", md.Name, upToDate, workers), nil
	}
	machines, err := machinesOf(ctx, c)
	if err != nil {
		return false, "", err
	}
	for _, m := range machines {
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			continue
		}
		if _, updating := m.Annotations[clusterv1.UpdateInProgressAnnotation]; updating {
			return false, fmt.Sprintf("CAPI is updating Machine %s", m.Name), nil
		}
		if m.Status.NodeInfo == nil || m.Status.NodeInfo.OSImage != talossim.OSImage(version) {
			return false, fmt.Sprintf("Machine %s does not report Talos %s yet", m.Name, version), nil
		}
	}
	return true, "", nil
}

// reportNodeInfo waits until CAPI reports in every Machine's
// status.nodeInfo the Talos its node runs now (the target; the control
// plane's own with --capi-driven, which updates the workers only), as
// CAPI's Machine controller copies it from the Node, and prints it.
func reportNodeInfo(ctx context.Context, mgmt client.Client, c *config, out io.Writer) error {
	want := func(m *clusterv1.Machine) string {
		if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp && c.capiDriven {
			return c.from
		}
		return c.to
	}
	ctx, cancel := context.WithTimeout(ctx, nodeInfoTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		machines, err := machinesOf(ctx, mgmt)
		if err != nil {
			return err
		}
		var behind []string
		for i := range machines {
			m := &machines[i]
			if m.Status.NodeInfo == nil || m.Status.NodeInfo.OSImage != talossim.OSImage(want(m)) {
				behind = append(behind, m.Name)
			}
		}
		if len(behind) == 0 && len(machines) == c.machines {
			printLine(out, "Cluster API reports what each node runs (Machine status.nodeInfo.osImage, copied by CAPI's Machine controller from the Node):")
			for _, m := range machines {
				printf(out, "  Machine %-32s %q\n", m.Name, m.Status.NodeInfo.OSImage)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CAPI does not report the new Talos in status.nodeInfo of Machines %s within %s", strings.Join(behind, ", "), nodeInfoTimeout)
		case <-tick.C: // Polling what CAPI writes.
		}
	}
}

// sameWorkers checks and says that the workers were updated in place, by
// whom (by): the same Machines before and after.
func sameWorkers(ctx context.Context, cl *sandbox.Cluster, before []string, by string, out io.Writer) error {
	after, err := cl.MachineNames(ctx, sandbox.RoleWorker)
	if err != nil {
		return err
	}
	if !slices.Equal(before, after) {
		return fmt.Errorf("CAPI replaced workers instead of updating them in place: %s before, %s after", strings.Join(before, ", "), strings.Join(after, ", "))
	}
	printf(out, "The same Machine names before and after: %s (updated in place %s, none replaced)\n", strings.Join(after, ", "), by)
	return nil
}

// machinesOf lists the demo Cluster's Machines, by name.
func machinesOf(ctx context.Context, c client.Client) ([]clusterv1.Machine, error) {
	list := &clusterv1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		return nil, fmt.Errorf("listing the Machines of Cluster %s/%s: %w", namespace, clusterName, err)
	}
	slices.SortFunc(list.Items, func(a, b clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}
