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
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// followed is what a follower saw of a rollout.
type followed struct {
	// upgrade is the TalosUpgrade as it ended.
	upgrade *upgradev1.TalosUpgrade
	// timeline is what the last watch saw.
	timeline *rolloutview.Timeline
	// checksHeld is how long the rollout waited for its health checks, as
	// every watch of it saw.
	checksHeld time.Duration
}

// follower follows a rollout live until it ends or timeout.
type follower func(ctx context.Context, sb *sandbox.Sandbox, timeout time.Duration, live *rolloutview.Live) (*followed, error)

// followRollout shows the Cluster's rollout live until it ends or timeout,
// with the view kubectl tollgate watch shows (package rolloutview):
// redrawn in place on a terminal, a line per change otherwise.
func followRollout(ctx context.Context, sb *sandbox.Sandbox, timeout time.Duration, live *rolloutview.Live) (*followed, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return followOnce(ctx, sb, live)
}

// followOnce follows the rollout until its TalosUpgrade is finished for its
// current spec, or ctx is done.
func followOnce(ctx context.Context, sb *sandbox.Sandbox, live *rolloutview.Live) (*followed, error) {
	c, err := client.NewWithWatch(sb.Management.Config, client.Options{Scheme: sb.Management.Client.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a watching client: %w", err)
	}
	r, tl, err := rolloutview.Follow(ctx, c, rolloutview.FollowOptions{Namespace: namespace, Cluster: clusterName, Machines: true}, live)
	if errors.Is(err, context.DeadlineExceeded) {
		last := "no TalosUpgrade was created"
		if u := r.Upgrade; u != nil {
			last = fmt.Sprintf("phase %s, %s Machines, blocked by %q", u.Status.Phase, u.Status.Progress, u.Status.BlockedBy)
		}
		return nil, fmt.Errorf("the rollout did not end in time (%s): %w", last, err)
	}
	if err != nil {
		return nil, err
	}
	return &followed{upgrade: r.Upgrade, timeline: tl, checksHeld: tl.RolloutDurations()[string(upgradev1.UpgradePhaseWaitingForHealthChecks)]}, nil
}
