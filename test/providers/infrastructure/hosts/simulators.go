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

package hosts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// errClosed is returned by Boot once the Simulators are closed.
var errClosed = errors.New("the simulators are closed")

// SimulatorsOptions configure NewSimulators.
type SimulatorsOptions struct {
	// Simulator are the options of every Cluster's simulator (port, reboot
	// duration, logs, call observer). Its NodeUpdater is replaced by one
	// that updates the Node in the Cluster's workload cluster, then tells
	// NodeUpdater below.
	Simulator talossim.Options

	// NodeUpdater, when set, is told of every reboot of every node after
	// its Node was updated.
	NodeUpdater talossim.NodeUpdater
}

// Simulators runs the machines of each Cluster on a talossim.Simulator of
// its own, started at the first Boot of one of its machines: one CA per
// Cluster (Simulator(cluster).TalosConfigSecret gives its
// <cluster>-talosconfig Secret), etcd members per Cluster, and node names
// that are the machines' names, unique within a Cluster.
type Simulators struct {
	opts SimulatorsOptions

	mu       sync.Mutex
	clusters map[client.ObjectKey]*clusterSimulator
	closed   bool
}

var _ Hosts = &Simulators{}

// clusterSimulator is the simulator of one Cluster and what updates its
// workload Nodes.
type clusterSimulator struct {
	sim     *talossim.Simulator
	updater *workloadNodes
}

// NewSimulators returns Simulators that start no simulator until a machine
// boots.
func NewSimulators(opts SimulatorsOptions) *Simulators {
	return &Simulators{opts: opts, clusters: map[client.ObjectKey]*clusterSimulator{}}
}

// Boot starts the machine's node on its Cluster's simulator unless a node
// of that name runs there, and returns its address and the version it runs.
func (s *Simulators) Boot(ctx context.Context, h Host) (Booted, error) {
	if h.Cluster.Name == "" || h.Name == "" || h.Version == "" {
		return Booted{}, fmt.Errorf("booting %q of Cluster %q: a host needs a Cluster, a name and a version", h.Name, h.Cluster)
	}

	cs, err := s.simulator(h.Cluster)
	if err != nil {
		return Booted{}, err
	}

	if h.Workload != nil {
		if err := cs.updater.setClient(ctx, h.Workload); err != nil {
			return Booted{}, fmt.Errorf("reporting the kubelets of Cluster %q: %w", h.Cluster, err)
		}
	}

	n := cs.sim.Node(h.Name)
	if n == nil {
		n, err = cs.sim.AddNode(talossim.NodeConfig{
			Name:              h.Name,
			Version:           h.Version,
			ControlPlane:      h.ControlPlane,
			EtcdCluster:       h.Cluster.String(),
			Schematic:         h.Schematic,
			KubernetesVersion: h.KubernetesVersion,
		})
		if err != nil {
			return Booted{}, fmt.Errorf("booting the simulated node %q of Cluster %q: %w", h.Name, h.Cluster, err)
		}
		// Its kubelet starts with it: its static Pods appear in the
		// workload cluster, as the provider's Node does.
		n.ReportKubelet()
	}

	return Booted{Address: n.Address(), Version: n.Version()}, nil
}

// Remove stops the node of machine name of cluster and forgets it.
func (s *Simulators) Remove(_ context.Context, cluster client.ObjectKey, name string) error {
	s.mu.Lock()
	cs := s.clusters[cluster]
	s.mu.Unlock()

	if cs != nil {
		cs.sim.RemoveNode(name)
	}

	return nil
}

// Simulator returns the simulator of cluster, started if need be: its
// TalosConfigSecret is the <cluster>-talosconfig Secret that reaches the
// Cluster's nodes (dialed at their Machine addresses), whenever they boot.
func (s *Simulators) Simulator(cluster client.ObjectKey) (*talossim.Simulator, error) {
	cs, err := s.simulator(cluster)
	if err != nil {
		return nil, err
	}

	return cs.sim, nil
}

// Clusters returns the Clusters that have a simulator, sorted.
func (s *Simulators) Clusters() []client.ObjectKey {
	s.mu.Lock()
	defer s.mu.Unlock()

	keys := make([]client.ObjectKey, 0, len(s.clusters))
	for k := range s.clusters {
		keys = append(keys, k)
	}

	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })

	return keys
}

// Close stops every simulator; Boot fails afterwards.
func (s *Simulators) Close() error {
	s.mu.Lock()
	s.closed = true
	clusters := s.clusters
	s.clusters = map[client.ObjectKey]*clusterSimulator{}
	s.mu.Unlock()

	errs := make([]error, 0, len(clusters))
	for _, cs := range clusters {
		errs = append(errs, cs.sim.Close())
	}

	return errors.Join(errs...)
}

// simulator returns the simulator of cluster, started if need be.
func (s *Simulators) simulator(cluster client.ObjectKey) (*clusterSimulator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.closed {
		return nil, errClosed
	}

	if cs := s.clusters[cluster]; cs != nil {
		return cs, nil
	}

	updater := &workloadNodes{observe: s.opts.NodeUpdater}
	o := s.opts.Simulator
	o.NodeUpdater = updater

	sim, err := talossim.New(o)
	if err != nil {
		return nil, fmt.Errorf("starting the Talos simulator of Cluster %q: %w", cluster, err)
	}

	cs := &clusterSimulator{sim: sim, updater: updater}
	s.clusters[cluster] = cs

	return cs, nil
}

// workloadNodes is the NodeUpdater of a Cluster's simulator: the stand-in
// kubelet of its nodes, which updates their Nodes in the workload cluster
// the latest Boot gave a client of, then tells observe.
type workloadNodes struct {
	observe talossim.NodeUpdater

	mu     sync.Mutex
	client client.Client
	// unsent are the latest kubelet reports of the nodes, by name, made
	// while no client was known.
	unsent map[string]talossim.Kubelet
}

var _ talossim.NodeUpdater = &workloadNodes{}

// setClient makes c the client of the workload's Nodes. The first client
// gets what the kubelets reported before it was known (a node booted before
// the Cluster's kubeconfig Secret existed), as a kubelet reports again once
// it reaches its apiserver.
func (w *workloadNodes) setClient(ctx context.Context, c client.Client) error {
	w.mu.Lock()
	first := w.client == nil
	w.client = c
	unsent := w.unsent
	w.unsent = nil
	w.mu.Unlock()

	if !first {
		return nil
	}

	u := &talossim.KubeNodeUpdater{Client: c}

	var errs []error

	for name, kubelet := range unsent {
		errs = append(errs, u.KubeletChanged(ctx, name, kubelet))
	}

	return errors.Join(errs...)
}

// kube returns the updater of the workload's Nodes, nil while no client is
// known.
func (w *workloadNodes) kube() *talossim.KubeNodeUpdater {
	w.mu.Lock()
	defer w.mu.Unlock()

	if w.client == nil {
		return nil
	}

	return &talossim.KubeNodeUpdater{Client: w.client}
}

// NodeRebooting marks the Node NotReady.
func (w *workloadNodes) NodeRebooting(ctx context.Context, name string) error {
	var err error
	if u := w.kube(); u != nil {
		err = u.NodeRebooting(ctx, name)
	}

	if w.observe != nil {
		err = errors.Join(err, w.observe.NodeRebooting(ctx, name))
	}

	return err
}

// NodeBooted marks the Node Ready on version.
func (w *workloadNodes) NodeBooted(ctx context.Context, name, version string) error {
	var err error
	if u := w.kube(); u != nil {
		err = u.NodeBooted(ctx, name, version)
	}

	if w.observe != nil {
		err = errors.Join(err, w.observe.NodeBooted(ctx, name, version))
	}

	return err
}

var _ talossim.KubeletReporter = &workloadNodes{}

// kubeOrKeep returns the updater of the workload's Nodes or, while no
// client is known, keeps the latest report of node name for the first one.
func (w *workloadNodes) kubeOrKeep(name string, kubelet talossim.Kubelet) *talossim.KubeNodeUpdater {
	w.mu.Lock()
	defer w.mu.Unlock()

	if w.client != nil {
		return &talossim.KubeNodeUpdater{Client: w.client}
	}

	if w.unsent == nil {
		w.unsent = map[string]talossim.Kubelet{}
	}

	w.unsent[name] = kubelet

	return nil
}

// KubeletChanged reports what the node's kubelet reports (its version and
// static Pods) to the workload cluster, then tells observe when it listens
// for it.
func (w *workloadNodes) KubeletChanged(ctx context.Context, name string, kubelet talossim.Kubelet) error {
	var err error
	if u := w.kubeOrKeep(name, kubelet); u != nil {
		err = u.KubeletChanged(ctx, name, kubelet)
	}

	if reporter, ok := w.observe.(talossim.KubeletReporter); ok {
		err = errors.Join(err, reporter.KubeletChanged(ctx, name, kubelet))
	}

	return err
}
