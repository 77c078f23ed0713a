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
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// clusterHooks are what a Cluster made with Options.CAPI asks of the
// providers beyond the template's objects: who observes its nodes' calls
// (ClusterOptions.OnCall), and the client its nodes' stand-in kubelets
// report their Nodes with when its kubeconfig Secret reaches the workload
// apiserver through something else (ClusterOptions.Kubeconfig: a proxy that
// fails requests, a gate that cuts them), as a kubelet talks to its
// apiserver directly, not as the management cluster sees it.
type clusterHooks struct {
	mu sync.Mutex
	// onCall are the call observers, by Cluster simulator.
	onCall map[*talossim.Simulator]func(talossim.Call)
	// kubelets are the direct workload clients, by Cluster.
	kubelets map[client.ObjectKey]client.Client
}

// set registers the hooks of cluster, whose nodes run on sim.
func (h *clusterHooks) set(cluster client.ObjectKey, sim *talossim.Simulator, onCall func(talossim.Call), kubelet client.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if onCall != nil {
		if h.onCall == nil {
			h.onCall = map[*talossim.Simulator]func(talossim.Call){}
		}
		h.onCall[sim] = onCall
	}
	if kubelet != nil {
		if h.kubelets == nil {
			h.kubelets = map[client.ObjectKey]client.Client{}
		}
		h.kubelets[cluster] = kubelet
	}
}

// observe tells a call to the observer of the Cluster whose simulator runs
// the node: the providers' simulators share one talossim.Options.OnCall,
// and a node's name is its Machine's, unique to its Cluster.
func (h *clusterHooks) observe(call talossim.Call) {
	h.mu.Lock()
	var observe func(talossim.Call)
	for sim, f := range h.onCall {
		if sim.Node(call.Node) != nil {
			observe = f
			break
		}
	}
	h.mu.Unlock()
	if observe != nil {
		observe(call)
	}
}

// kubeletHosts runs the machines on the providers' simulators, handing each
// the direct workload client registered for its Cluster, if any.
type kubeletHosts struct {
	*hosts.Simulators
	hooks *clusterHooks
}

var _ hosts.Hosts = kubeletHosts{}

// Boot boots the machine, whose stand-in kubelet reports to the Cluster's
// direct workload client when one is registered.
func (k kubeletHosts) Boot(ctx context.Context, h hosts.Host) (hosts.Booted, error) {
	k.hooks.mu.Lock()
	if c := k.hooks.kubelets[h.Cluster]; c != nil {
		h.Workload = c
	}
	k.hooks.mu.Unlock()
	return k.Simulators.Boot(ctx, h)
}
