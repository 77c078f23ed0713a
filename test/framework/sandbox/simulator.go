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

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// NewSimulator starts a Talos node simulator for several Clusters to share
// (ClusterOptions.Simulator), on the sandbox's Talos API port and with its
// reboot duration: a fleet of many Clusters then costs one CA, and one call
// log holds every node's calls. When a node reboots, the Node of the
// workload cluster of the Cluster it was created for is updated; observe,
// when not nil, is told next. Stop closes the simulator.
func (s *Sandbox) NewSimulator(observe talossim.NodeUpdater) (*talossim.Simulator, error) {
	r := &nodeRouter{observe: observe, byNode: map[string]*talossim.KubeNodeUpdater{}}
	sim, err := s.newSimulator(talossim.Options{NodeUpdater: r})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.simulators = append(s.simulators, sim)
	s.routers[sim] = r
	s.mu.Unlock()
	return sim, nil
}

// newSimulator starts a simulator with o, on the sandbox's Talos API port
// and, unless o says otherwise, with its reboot duration.
func (s *Sandbox) newSimulator(o talossim.Options) (*talossim.Simulator, error) {
	o.Port = s.opts.TalosAPIPort
	if o.RebootDuration <= 0 {
		o.RebootDuration = s.opts.RebootDuration
	}
	sim, err := talossim.New(o)
	if err != nil {
		return nil, fmt.Errorf("starting a Talos simulator: %w", err)
	}
	return sim, nil
}

// route sends the node updates of node, on a simulator from NewSimulator,
// to workload w.
func (s *Sandbox) route(sim *talossim.Simulator, node string, w *Workload) {
	s.mu.Lock()
	r := s.routers[sim]
	s.mu.Unlock()
	if r == nil {
		return // Not one of ours: its NodeUpdater is the caller's.
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byNode[node] = &talossim.KubeNodeUpdater{Client: w.Client}
}

// nodeRouter is the NodeUpdater of a shared simulator: it updates each
// node's Node in the workload cluster it was routed to, then tells observe.
type nodeRouter struct {
	observe talossim.NodeUpdater

	mu     sync.Mutex
	byNode map[string]*talossim.KubeNodeUpdater
}

var _ talossim.NodeUpdater = &nodeRouter{}

func (r *nodeRouter) updater(node string) (*talossim.KubeNodeUpdater, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.byNode[node]
	if !ok {
		return nil, fmt.Errorf("simulated node %s belongs to no Cluster of the sandbox", node)
	}
	return u, nil
}

// NodeRebooting marks the Node NotReady.
func (r *nodeRouter) NodeRebooting(ctx context.Context, node string) error {
	u, err := r.updater(node)
	if err == nil {
		err = u.NodeRebooting(ctx, node)
	}
	if r.observe != nil {
		err = errors.Join(err, r.observe.NodeRebooting(ctx, node))
	}
	return err
}

// NodeBooted marks the Node Ready on version.
func (r *nodeRouter) NodeBooted(ctx context.Context, node, version string) error {
	u, err := r.updater(node)
	if err == nil {
		err = u.NodeBooted(ctx, node, version)
	}
	if r.observe != nil {
		err = errors.Join(err, r.observe.NodeBooted(ctx, node, version))
	}
	return err
}

var _ talossim.KubeletReporter = &nodeRouter{}

// KubeletChanged reports what the node's kubelet reports (its version and
// static Pods) to the workload cluster it was routed to, then tells observe
// when it listens for it.
func (r *nodeRouter) KubeletChanged(ctx context.Context, node string, kubelet talossim.Kubelet) error {
	u, err := r.updater(node)
	if err == nil {
		err = u.KubeletChanged(ctx, node, kubelet)
	}
	if reporter, ok := r.observe.(talossim.KubeletReporter); ok {
		err = errors.Join(err, reporter.KubeletChanged(ctx, node, kubelet))
	}
	return err
}
