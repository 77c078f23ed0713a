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

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// declareVersion plays faultDeclareVersion: mid-rollout, the workers'
// MachineDeployment declares the policy's current target in its
// spec.template.metadata, as a user pins a pool in Git; half the time the
// declaration is taken off again a few seconds later. Its Machines go to
// the declared version through the same gates, and stay there when the
// policy names a new target (invariant 6 judges them against it).
func (s *soak) declareVersion(ctx context.Context, c *soakCluster, rng *rand.Rand) error {
	version := c.target()
	if err := s.writeDeclared(ctx, c, version); err != nil {
		return err
	}
	s.cfg.Logf("Fleet: MachineDeployment %s/%s declares Talos %s in spec.template.metadata.annotations[%s]: its Machines go there, whatever target the policy names next",
		c.ns, sandbox.WorkersName(c.name), version, upgradev1.DesiredTalosVersionAnnotation)
	if rng.IntN(2) == 0 {
		return nil
	}
	if !sleep(ctx, 3*time.Second+time.Duration(rng.Int64N(int64(5*time.Second)))) {
		return ctx.Err()
	}
	if err := s.writeDeclared(ctx, c, ""); err != nil {
		return err
	}
	s.cfg.Logf("Fleet: MachineDeployment %s/%s declares no Talos version any more: its Machines go to the policy's target", c.ns, sandbox.WorkersName(c.name))
	return nil
}

// writeDeclared writes version in the workers' MachineDeployment's
// template annotations ("" takes it off), and records it for invariant 6
// before the write, under the Cluster's lock.
func (s *soak) writeDeclared(ctx context.Context, c *soakCluster, version string) error {
	mgmt := s.world.mgmt.Client
	md := &clusterv1.MachineDeployment{}
	key := client.ObjectKey{Namespace: c.ns, Name: sandbox.WorkersName(c.name)}
	if err := mgmt.Get(ctx, key, md); err != nil {
		return fmt.Errorf("reading MachineDeployment %s: %w", key, err)
	}
	patch := client.MergeFrom(md.DeepCopy())
	if version == "" {
		delete(md.Spec.Template.Annotations, upgradev1.DesiredTalosVersionAnnotation)
	} else {
		if md.Spec.Template.Annotations == nil {
			md.Spec.Template.Annotations = map[string]string{}
		}
		md.Spec.Template.Annotations[upgradev1.DesiredTalosVersionAnnotation] = version
	}
	c.mu.Lock()
	c.declared = version
	c.mu.Unlock()
	if err := mgmt.Patch(ctx, md, patch); err != nil {
		return fmt.Errorf("declaring Talos %q on MachineDeployment %s: %w", version, key, err)
	}
	return nil
}
