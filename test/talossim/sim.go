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

package talossim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
)

// DefaultPort is the port every simulated node listens on, the Talos API
// port, so that clients dial <node address>:50000 unchanged.
const DefaultPort = 50000

// DefaultRebootDuration is how long a node's API is down during a reboot
// unless Options.RebootDuration says otherwise.
const DefaultRebootDuration = time.Second

// Options configure a Simulator.
type Options struct {
	// Port is the port of every node's API. Zero means DefaultPort.
	Port int

	// RebootDuration is how long a node's API stays unavailable during a
	// reboot. Zero means DefaultRebootDuration.
	RebootDuration time.Duration

	// StaticPodStartDelay is how long a static Pod takes to become Ready
	// once it (re)starts, and a restarted kubelet to report its version.
	// Zero means DefaultStaticPodStartDelay.
	StaticPodStartDelay time.Duration

	// NodeUpdater, when set, is told when a node goes down for a reboot and
	// when it is back, so that it can update the matching Kubernetes Node
	// (see KubeNodeUpdater); if it is a KubeletReporter, also what the
	// kubelet of a node that reports Kubernetes runs.
	NodeUpdater NodeUpdater

	// Logf, when set, receives a line for every state change of a node.
	Logf func(format string, args ...any)

	// OnCall, when set, is told every RPC a node receives, before the node
	// handles it, on the goroutine of the call: an observer can read the
	// world as it is when the call arrives.
	OnCall func(Call)
}

// Call is one RPC received by a simulated node.
type Call struct {
	// Node is the name of the node that handled the call (the target of
	// the node metadata, which may differ from the endpoint dialed).
	Node string
	// RPC is the service and method, such as RPCVersion.
	RPC string
	// Time is when the call arrived.
	Time time.Time
	// BootID is the boot of the node when the call arrived.
	BootID string
}

// Simulator is a set of simulated Talos nodes sharing one CA.
type Simulator struct {
	opts Options
	ca   *certificateAuthority

	mu             sync.Mutex
	nodes          map[string]*Node // by name
	calls          []Call
	rebootDuration time.Duration
	closed         bool

	wg   sync.WaitGroup
	done chan struct{}
}

// New returns a Simulator with a fresh CA and no node.
func New(opts Options) (*Simulator, error) {
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}

	if opts.RebootDuration == 0 {
		opts.RebootDuration = DefaultRebootDuration
	}

	if opts.StaticPodStartDelay == 0 {
		opts.StaticPodStartDelay = DefaultStaticPodStartDelay
	}

	ca, err := newCertificateAuthority()
	if err != nil {
		return nil, err
	}

	return &Simulator{
		opts:           opts,
		ca:             ca,
		nodes:          map[string]*Node{},
		rebootDuration: opts.RebootDuration,
		done:           make(chan struct{}),
	}, nil
}

// NodeConfig describes a simulated node when it is added.
type NodeConfig struct {
	// Name is the node's hostname, also the name of its Kubernetes Node.
	Name string
	// Version is the Talos version the node runs, for example "v1.12.4".
	Version string
	// ControlPlane makes the node an etcd member.
	ControlPlane bool
	// EtcdCluster names the etcd cluster of a control-plane node: its
	// members are the control-plane nodes of the same name (every
	// control-plane node of the simulator when empty), as when one
	// simulator serves the nodes of several Clusters.
	EtcdCluster string
	// Schematic is the Image Factory schematic ID the node runs; empty
	// means the node has no "schematic" extension (the default schematic).
	Schematic string
	// Extensions are further system extensions the node reports.
	Extensions []Extension
	// Platform is the node's platform, "metal" when empty.
	Platform string
	// Address, when set, is the IP the node listens on instead of a random
	// loopback address.
	Address string
	// MachineConfig, when set, is the node's Talos machine configuration
	// (YAML, as "talosctl gen config" writes it): it must load and validate
	// as Talos loads it, and be of the node's role. When empty, the node
	// runs the configuration Talos' generator makes for its role and
	// version, in the cluster named EtcdCluster (DefaultClusterName when
	// empty, one secrets bundle per cluster name), on KubernetesVersion; it is
	// generated when first needed.
	MachineConfig []byte
	// KubernetesVersion is the Kubernetes version of a generated machine
	// configuration, such as "v1.35.2" (the images of the kubelet and the
	// control-plane components); the machinery's default when empty.
	//
	// A node added with a MachineConfig or a KubernetesVersion reports
	// Kubernetes: its configuration decides the kubelet version and static
	// Pods a KubeletReporter is told of. Other nodes leave the Kubernetes
	// Node's kubeletVersion and the static Pods to the test, as before.
	KubernetesVersion string
	// KubeletRepository, when set, is the repository of the kubelet image
	// of a generated machine configuration (machine.kubelet.image), a
	// mirror of ghcr.io/siderolabs/kubelet, Talos' default, such as the
	// sandbox registry's.
	KubeletRepository string
}

// Extension is a system extension a node reports as an ExtensionStatus.
type Extension struct {
	Name    string
	Version string
}

// AddNode starts a node on its own loopback address and returns it.
func (s *Simulator) AddNode(cfg NodeConfig) (*Node, error) {
	if cfg.Name == "" || cfg.Version == "" {
		return nil, errors.New("a node needs a name and a version")
	}

	if cfg.Platform == "" {
		cfg.Platform = "metal"
	}

	clusterName := cfg.EtcdCluster
	if clusterName == "" {
		clusterName = DefaultClusterName
	}

	var machineConfig talosconfig.Provider

	if len(cfg.MachineConfig) > 0 {
		loaded, _, err := loadConfig(cfg.MachineConfig)
		if err != nil {
			return nil, fmt.Errorf("the machine configuration of node %q: %w", cfg.Name, err)
		}

		if err := checkRole(loaded, cfg.ControlPlane); err != nil {
			return nil, fmt.Errorf("node %q: %w", cfg.Name, err)
		}

		machineConfig = loaded
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()

		return nil, errors.New("simulator is closed")
	}

	if _, ok := s.nodes[cfg.Name]; ok {
		s.mu.Unlock()

		return nil, fmt.Errorf("node %q already exists", cfg.Name)
	}
	s.mu.Unlock()

	n := &Node{
		sim:          s,
		name:         cfg.Name,
		controlPlane: cfg.ControlPlane,
		etcdCluster:  cfg.EtcdCluster,
		platform:     cfg.Platform,
		version:      cfg.Version,
		schematic:    cfg.Schematic,
		extensions:   cfg.Extensions,
		bootID:       uuid.NewString(),
		bootTime:     time.Now().Truncate(time.Second),
		memberID:     rand.Uint64(), //nolint:gosec // an etcd member ID, not a secret.
		pulled:       map[string]bool{},

		clusterName:       clusterName,
		kubernetesVersion: cfg.KubernetesVersion,
		kubeletRepository: cfg.KubeletRepository,
		reportsKubernetes: machineConfig != nil || cfg.KubernetesVersion != "",
		active:            machineConfig,
		persistent:        machineConfig,
	}

	if machineConfig == nil && cfg.KubernetesVersion != "" {
		if err := n.ensureConfig(); err != nil {
			return nil, err
		}
	}

	if n.active != nil {
		n.kubelet = settledKubelet(n.active, n.controlPlane, Faults{})
	}

	lis, err := s.listen(cfg.Address)
	if err != nil {
		return nil, err
	}

	n.ip = lis.Addr().(*net.TCPAddr).IP

	if err := n.boot(lis); err != nil {
		_ = lis.Close()

		return nil, err
	}

	s.mu.Lock()
	s.nodes[cfg.Name] = n
	s.mu.Unlock()

	s.logf("Node %s (%s) up on %s", n.name, n.version, n.ip)

	return n, nil
}

// RemoveNode stops the node called name for good and forgets it, as when
// its machine is deleted: its address is free again, it leaves the etcd
// members and the talosconfig of nodes added later, and a reboot in
// progress does not bring it back. Removing an unknown node is no error.
func (s *Simulator) RemoveNode(name string) {
	s.mu.Lock()
	n := s.nodes[name]
	delete(s.nodes, name)
	s.mu.Unlock()

	if n == nil {
		return
	}

	n.mu.Lock()
	n.removed = true
	n.mu.Unlock()

	n.shutdown()
	s.logf("Node %s removed", name)
}

// listen listens on addr, or on a random 127.x.y.z address when addr is
// empty, retrying on another address when one is taken (parallel test
// processes share the loopback network).
func (s *Simulator) listen(addr string) (net.Listener, error) {
	if addr != "" {
		return net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(s.opts.Port)))
	}

	var lastErr error

	for range 100 {
		//nolint:gosec // a random loopback address, not a secret.
		ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))

		lis, err := net.Listen("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(s.opts.Port)))
		if err == nil {
			return lis, nil
		}

		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}

	return nil, fmt.Errorf("no free loopback address: %w", lastErr)
}

// Node returns the node called name, or nil.
func (s *Simulator) Node(name string) *Node {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.nodes[name]
}

// Nodes returns every node, sorted by name.
func (s *Simulator) Nodes() []*Node {
	s.mu.Lock()
	defer s.mu.Unlock()

	nodes := make([]*Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		nodes = append(nodes, n)
	}

	sort.Slice(nodes, func(i, j int) bool { return nodes[i].name < nodes[j].name })

	return nodes
}

// nodeByAddress finds a node by IP address or name, as apid resolves the
// node metadata.
func (s *Simulator) nodeByAddress(target string) *Node {
	s.mu.Lock()
	defer s.mu.Unlock()

	if n, ok := s.nodes[target]; ok {
		return n
	}

	if host, _, err := net.SplitHostPort(target); err == nil {
		target = host
	}

	for _, n := range s.nodes {
		if n.ip.String() == target {
			return n
		}
	}

	return nil
}

// SetRebootDuration changes how long the API of a rebooting node stays
// unavailable, for reboots that start from now on.
func (s *Simulator) SetRebootDuration(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()

	s.rebootDuration = d
}

// staticPodStartDelay is Options.StaticPodStartDelay.
func (s *Simulator) staticPodStartDelay() time.Duration { return s.opts.StaticPodStartDelay }

func (s *Simulator) getRebootDuration() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.rebootDuration
}

// Port is the port every node listens on.
func (s *Simulator) Port() int { return s.opts.Port }

// CACertificate returns the PEM-encoded CA certificate of the simulated
// cluster.
func (s *Simulator) CACertificate() []byte { return s.ca.certPEM }

// TalosConfig returns a talosconfig whose single context, named contextName
// and current, holds the CA, an admin client certificate, and every node
// added so far as endpoint and node: the shape of the talosconfig the Talos
// CAPI bootstrap provider stores in the <cluster>-talosconfig Secret.
func (s *Simulator) TalosConfig(contextName string) ([]byte, error) {
	nodes := s.Nodes()
	addrs := make([]string, 0, len(nodes))

	for _, n := range nodes {
		addrs = append(addrs, n.Address())
	}

	return s.ca.talosConfig(contextName, addrs, addrs)
}

// CallLog returns every call received so far, in order.
func (s *Simulator) CallLog() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()

	return append([]Call(nil), s.calls...)
}

// Calls counts the calls of rpc (such as RPCUpgrade) handled by the node
// called node.
func (s *Simulator) Calls(node, rpc string) int {
	s.mu.Lock()
	defer s.mu.Unlock()

	count := 0

	for _, c := range s.calls {
		if c.Node == node && c.RPC == rpc {
			count++
		}
	}

	return count
}

// ResetCallLog forgets the calls received so far.
func (s *Simulator) ResetCallLog() {
	s.mu.Lock()
	defer s.mu.Unlock()

	s.calls = nil
}

func (s *Simulator) record(node *Node, rpc string) {
	c := Call{Node: node.name, RPC: rpc, Time: time.Now(), BootID: node.BootID()}

	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()

	if s.opts.OnCall != nil {
		s.opts.OnCall(c)
	}
}

// Close stops every node and waits for pending reboots to end.
func (s *Simulator) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()

		return nil
	}

	s.closed = true
	close(s.done)

	nodes := make([]*Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		nodes = append(nodes, n)
	}
	s.mu.Unlock()

	for _, n := range nodes {
		n.shutdown()
	}

	s.wg.Wait()

	return nil
}

// isClosed reports whether Close was called.
func (s *Simulator) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *Simulator) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// after runs fn after d on a goroutine that Close waits for, unless the
// simulator is closed first.
func (s *Simulator) after(d time.Duration, fn func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()

		return
	}

	s.wg.Add(1)
	s.mu.Unlock()

	go func() {
		defer s.wg.Done()

		t := time.NewTimer(d)
		defer t.Stop()

		select {
		case <-t.C:
			fn()
		case <-s.done:
		}
	}()
}

// notify tells the NodeUpdater about a node, bounded in time.
func (s *Simulator) notify(fn func(ctx context.Context, u NodeUpdater) error) {
	if s.opts.NodeUpdater == nil {
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := fn(ctx, s.opts.NodeUpdater); err != nil {
		s.logf("Updating the Kubernetes Node failed: %v", err)
	}
}
