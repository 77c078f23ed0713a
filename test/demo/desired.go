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
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// desiredStep is one object of the Cluster the demo moves by writing the
// version in it, as a Git change does.
type desiredStep struct {
	kind, name, field string
	write             func(ctx context.Context, c client.Client, version string) error
}

// desiredSteps are the objects --desired-versions moves, one after the
// other: the control plane, then the workers' MachineDeployment when the
// Cluster has workers.
func desiredSteps(workers int) []desiredStep {
	steps := make([]desiredStep, 0, 2)
	steps = append(steps, desiredStep{
		kind: "TalosControlPlane", name: sandbox.ControlPlaneName(clusterName), field: "metadata.annotations",
		write: func(ctx context.Context, c client.Client, version string) error {
			tcp := &controlplanev1.TalosControlPlane{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sandbox.ControlPlaneName(clusterName)}, tcp); err != nil {
				return err
			}
			patch := client.MergeFrom(tcp.DeepCopy())
			if tcp.Annotations == nil {
				tcp.Annotations = map[string]string{}
			}
			tcp.Annotations[upgradev1.DesiredTalosVersionAnnotation] = version
			return c.Patch(ctx, tcp, patch)
		},
	})
	if workers == 0 {
		return steps
	}
	return append(steps, desiredStep{
		kind: "MachineDeployment", name: sandbox.WorkersName(clusterName), field: "spec.template.metadata.annotations",
		write: func(ctx context.Context, c client.Client, version string) error {
			md := &clusterv1.MachineDeployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sandbox.WorkersName(clusterName)}, md); err != nil {
				return err
			}
			patch := client.MergeFrom(md.DeepCopy())
			if md.Spec.Template.Annotations == nil {
				md.Spec.Template.Annotations = map[string]string{}
			}
			md.Spec.Template.Annotations[upgradev1.DesiredTalosVersionAnnotation] = version
			return c.Patch(ctx, md, patch)
		},
	})
}

// followDesired moves the Cluster to version one object at a time: it
// writes the version in the object, waits until the rollout took it
// (status.targets names the object as the source), follows the rollout
// until it ends, and checks that every Machine of the object runs version.
func followDesired(workers int, version string, say func(string, ...any)) follower {
	return func(ctx context.Context, sb *sandbox.Sandbox, timeout time.Duration, live *rolloutview.Live) (*followed, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var last *followed
		var checksHeld time.Duration
		for _, step := range desiredSteps(workers) {
			if err := step.write(ctx, sb.Management.Client, version); err != nil {
				return nil, fmt.Errorf("writing %s in %s %s: %w", version, step.kind, step.name, err)
			}
			say("Wrote %s=%s in %s %s %s, as a Git change does: the policy keeps the gates, the object says where its Machines go",
				upgradev1.DesiredTalosVersionAnnotation, version, step.kind, step.name, step.field)
			if _, err := waitTarget(ctx, sb, step, version, false); err != nil {
				return nil, err
			}
			f, err := followOnce(ctx, sb, live)
			if err != nil {
				return nil, err
			}
			checksHeld += f.checksHeld
			last = f
			t, err := waitTarget(ctx, sb, step, version, true)
			if err != nil {
				return nil, err
			}
			say("%s %s: %d of %d Machines on %s, from its own object; no CAPI rollout", step.kind, step.name, t.OnTarget, t.Machines, version)
		}
		last.checksHeld = checksHeld
		return last, nil
	}
}

// waitTarget waits until the rollout's status.targets says that the
// Machines of step's object go to version, written in the object, and
// with all, that every one of them runs it.
func waitTarget(ctx context.Context, sb *sandbox.Sandbox, step desiredStep, version string, all bool) (upgradev1.TargetStatus, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if u, err := sb.Upgrade(ctx, namespace, clusterName); err == nil {
			for _, t := range u.Status.Targets {
				if t.Kind == step.kind && t.Name == step.name && t.Source == upgradev1.VersionSourceObject && t.TalosVersion == version && (!all || t.OnTarget == t.Machines) {
					return t, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return upgradev1.TargetStatus{}, fmt.Errorf("the rollout did not carry %s %s to %s in time: %w", step.kind, step.name, version, ctx.Err())
		case <-tick.C: // Polling the rollout's status.
		}
	}
}
