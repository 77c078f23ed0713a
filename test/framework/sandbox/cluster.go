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
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// ClusterOptions describe a Cluster for CreateCluster.
type ClusterOptions struct {
	// Namespace and Name of the CAPI Cluster. The namespace is created.
	Namespace, Name string

	// ControlPlanes and Workers are the numbers of Machines, named
	// <name>-cp-<i> and <name>-worker-<i>, each with a Node of that name;
	// with Options.CAPI, the replicas of the TalosControlPlane and of the
	// MachineDeployment, whose Machines CAPI names
	// (Cluster.MachineNames).
	ControlPlanes, Workers int

	// TalosVersion is the version every node runs;
	// builder.DefaultTalosVersion when empty.
	TalosVersion string
	// KubernetesVersion is the version every node runs;
	// builder.DefaultKubernetesVersion when empty. When set, the simulated
	// nodes report what their kubelet runs (their Node's kubeletVersion,
	// and the mirror Pods of a control-plane node's static Pods) from
	// their machine configuration, which a Kubernetes upgrade changes.
	KubernetesVersion string
	// KubeletRepository, with KubernetesVersion, is the repository the
	// nodes' machine configuration names for the kubelet image, such as
	// the registry's (Sandbox.KubeletRepository): Tollgate lists its tags
	// to plan Kubernetes minors in between. Talos' default,
	// ghcr.io/siderolabs/kubelet, when empty.
	KubeletRepository string

	// Policy, when set, is the TalosUpgradePolicy the Cluster opts in to,
	// once its Machines, Nodes and talosconfig exist. With webhooks, the
	// policy must exist first. Cluster.OptIn does it later;
	// builder.WithPolicy in ClusterOptions labels the Cluster as it is
	// created.
	Policy string

	// Workload is the workload control plane to put the Nodes in, shared
	// with other Clusters; a new one is started when nil.
	Workload *Workload

	// Kubeconfig, when set, returns what the Cluster's <name>-kubeconfig
	// Secret holds, given its workload control plane: a kubeconfig that
	// reaches the apiserver through a proxy, for example. The workload's
	// admin kubeconfig when nil.
	Kubeconfig func(*Workload) ([]byte, error)

	// Simulator runs the Cluster's Talos nodes, shared with other Clusters
	// (see NewSimulator); the Cluster gets a simulator of its own when nil.
	Simulator *talossim.Simulator

	// RebootDuration is how long the nodes of the Cluster's own simulator
	// take to reboot; Options.RebootDuration when zero.
	RebootDuration time.Duration

	// Schematics are the Image Factory schematic IDs some nodes run, by
	// node name (talossim.NodeConfig.Schematic); a node not named runs none.
	Schematics map[string]string

	// OnCall, when set, is told every call the nodes of the Cluster's own
	// simulator receive (talossim.Options.OnCall).
	OnCall func(talossim.Call)

	// WithoutTalos gives the Machines no address and no simulated node,
	// and the Cluster no talosconfig unless Talosconfig returns one: for a
	// fleet already on its target, too large to simulate.
	WithoutTalos bool

	// Talosconfig, when set, returns what the Cluster's <name>-talosconfig
	// Secret holds, once its nodes run; none is created when it returns
	// nil. When Talosconfig is nil the Secret holds the simulator's
	// talosconfig (every node of the simulator).
	Talosconfig func() ([]byte, error)

	// Secret, when set, adjusts the Cluster's kubeconfig and talosconfig
	// Secrets before they are written: planted canaries, for example.
	Secret func(*corev1.Secret)

	// MachineOptions, ClusterOptions and NodeOptions are applied to every
	// Machine, to the Cluster and to every workload Node.
	MachineOptions []builder.MachineOption
	ClusterOptions []builder.ClusterOption
	// ControlPlane, with Options.CAPI, changes the TalosControlPlane before
	// it is created (its rolloutStrategy, its patches).
	ControlPlane func(*controlplanev1.TalosControlPlane)
	// MachineDeployment, with Options.CAPI, changes the workers'
	// MachineDeployment before it is created (its rollout strategy).
	MachineDeployment func(*clusterv1.MachineDeployment)
	NodeOptions       []builder.NodeOption

	// InPlaceUpdates labels the Cluster's namespace with
	// upgradev1.InPlaceUpdatesNamespaceLabel before the Cluster is created:
	// CAPI then asks Tollgate's in-place update extension
	// (Options.Extension) to update its Machines instead of replacing them.
	// Only with Options.CAPI.
	InPlaceUpdates bool
}

// Cluster is a CAPI Cluster of simulated Talos nodes.
type Cluster struct {
	// Namespace and Name of the CAPI Cluster.
	Namespace, Name string

	// Workload is the workload control plane holding the Nodes.
	Workload *Workload

	// Simulator runs the Cluster's Talos nodes, one per Machine; nil for
	// a Cluster WithoutTalos.
	Simulator *talossim.Simulator

	// Fixture holds the Cluster, Machines and Nodes as created; with
	// Options.CAPI, as CAPI made them, control plane first, each role by
	// name.
	Fixture *builder.Fixture

	sb *Sandbox
	// ownWorkload and ownSimulator say what CreateCluster started for the
	// Cluster alone, for Stop.
	ownWorkload, ownSimulator bool
}

// CreateCluster creates a Cluster the way CAPI and the Talos providers
// leave it: a provisioned CAPI Cluster with its Machines (addresses,
// versions, node refs), a Ready Node per Machine in the workload cluster, a
// simulated Talos node per Machine reachable at the Machine's address, and
// the <cluster>-talosconfig and <cluster>-kubeconfig Secrets. Then, when
// o.Policy is set, the Cluster opts in to it. It may be called from several
// goroutines.
//
// With Options.CAPI, CAPI makes it: CreateCluster starts the workload
// control plane (its <cluster>-kubeconfig Secret stands for the one the
// control-plane provider writes) and writes the talosconfig of the
// Cluster's simulator, then creates what a user applies from
// templates/cluster-template-talos.yaml: the Cluster, its TalosSimCluster, a
// TalosControlPlane of o.ControlPlanes replicas and a MachineDeployment
// (<cluster>-md-0) of o.Workers replicas, each with a TalosSimMachineTemplate
// that boots o.TalosVersion; the MachineDeployment's Machines also have a
// TalosConfigTemplate. CAPI core and the providers make the Machines, boot
// their nodes and register their Nodes; CreateCluster returns once each is
// Running with the Node CAPI found for it (ClusterReadyTimeout), or at once
// when CAPI core or the providers are gone. The ClusterOptions that shape
// Machines, nodes or Nodes by hand are refused there.
func (s *Sandbox) CreateCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Namespace == "" || o.Name == "" || o.ControlPlanes+o.Workers == 0 {
		return nil, fmt.Errorf("a sandbox Cluster needs a namespace, a name and at least one Machine, got %q/%q with %d+%d", o.Namespace, o.Name, o.ControlPlanes, o.Workers)
	}
	if o.TalosVersion == "" {
		o.TalosVersion = builder.DefaultTalosVersion
	}
	var c *Cluster
	var err error
	switch {
	case s.opts.CAPI:
		c, err = s.createCAPICluster(ctx, o)
	case o.InPlaceUpdates:
		err = fmt.Errorf("cluster %s/%s: ClusterOptions.InPlaceUpdates needs Options.CAPI: without CAPI core nothing calls Tollgate's in-place update extension", o.Namespace, o.Name)
	default:
		c, err = s.createCluster(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	if o.Policy != "" {
		if err := c.OptIn(ctx, o.Policy); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// createCluster makes a Cluster's objects and their status by hand, as
// CAPI and the providers would leave them.
func (s *Sandbox) createCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	c := &Cluster{Namespace: o.Namespace, Name: o.Name, Workload: o.Workload, Simulator: o.Simulator, sb: s}
	if c.Workload == nil {
		var err error
		if c.Workload, err = s.StartWorkload(ctx, o.Namespace, o.Name, WorkloadOptions{}); err != nil {
			return nil, err
		}
		c.ownWorkload = true
	}
	switch {
	case o.WithoutTalos:
		c.Simulator = nil
	case c.Simulator == nil:
		sim, err := s.newSimulator(talossim.Options{
			RebootDuration: o.RebootDuration,
			NodeUpdater:    &talossim.KubeNodeUpdater{Client: c.Workload.Client},
			OnCall:         o.OnCall,
		})
		if err != nil {
			return nil, fmt.Errorf("starting the Talos simulator of %s/%s: %w", o.Namespace, o.Name, err)
		}
		c.Simulator, c.ownSimulator = sim, true
	}
	s.mu.Lock()
	s.clusters = append(s.clusters, c)
	s.mu.Unlock()

	addresses, err := c.addNodes(o)
	if err != nil {
		return nil, err
	}
	c.Fixture, err = builder.Create(ctx, s.Management.Client, c.Workload.Client, builder.ClusterFixture{
		Namespace: o.Namespace, Name: o.Name, ControlPlanes: o.ControlPlanes, Workers: o.Workers, TalosVersion: o.TalosVersion,
		KubernetesVersion: o.KubernetesVersion, MachineOptions: o.MachineOptions, ClusterOptions: o.ClusterOptions, NodeOptions: o.NodeOptions,
		Address: func(_ int, machine string) string { return addresses[machine] },
	})
	if err != nil {
		return nil, err
	}
	if err := s.storeSecrets(ctx, c, o); err != nil {
		return nil, err
	}
	s.logf("Created Cluster %s/%s: %d control-plane and %d worker Machines on Talos %s, a simulated Talos node each", o.Namespace, o.Name, o.ControlPlanes, o.Workers, o.TalosVersion)
	return c, nil
}

// addNodes starts a simulated Talos node per Machine and returns their
// addresses by name.
func (c *Cluster) addNodes(o ClusterOptions) (map[string]string, error) {
	addresses := map[string]string{}
	if c.Simulator == nil {
		return addresses, nil
	}
	for i := range o.ControlPlanes + o.Workers {
		node := fmt.Sprintf("%s-cp-%d", o.Name, i)
		if i >= o.ControlPlanes {
			node = fmt.Sprintf("%s-worker-%d", o.Name, i-o.ControlPlanes)
		}
		// A Cluster given a Kubernetes version has nodes that report their
		// kubelet's version and static Pods, from their machine
		// configuration.
		n, err := c.Simulator.AddNode(talossim.NodeConfig{
			Name: node, Version: o.TalosVersion, ControlPlane: i < o.ControlPlanes, EtcdCluster: o.Namespace + "/" + o.Name, Schematic: o.Schematics[node],
			KubernetesVersion: o.KubernetesVersion, KubeletRepository: o.KubeletRepository,
		})
		if err != nil {
			return nil, fmt.Errorf("starting the simulated Talos node %s: %w", node, err)
		}
		addresses[node] = n.Address()
		if !c.ownSimulator {
			c.sb.route(c.Simulator, node, c.Workload)
		}
	}
	return addresses, nil
}

// storeSecrets writes the kubeconfig Secret, when StartWorkload did not
// write it as asked, and the talosconfig Secret.
func (s *Sandbox) storeSecrets(ctx context.Context, c *Cluster, o ClusterOptions) error {
	if err := s.storeKubeconfig(ctx, c, o); err != nil {
		return err
	}
	var talosconfig []byte
	var err error
	switch {
	case o.Talosconfig != nil:
		talosconfig, err = o.Talosconfig()
	case c.Simulator != nil:
		talosconfig, err = c.Simulator.TalosConfig(o.Name)
	}
	if err != nil {
		return fmt.Errorf("building the talosconfig of %s/%s: %w", o.Namespace, o.Name, err)
	}
	if talosconfig == nil {
		return nil
	}
	secret := talossim.NewTalosConfigSecret(o.Namespace, o.Name, talosconfig)
	if o.Secret != nil {
		o.Secret(secret)
	}
	if err := s.Management.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// storeKubeconfig writes the kubeconfig Secret, when StartWorkload did not
// write it as asked: the Cluster shares a workload, or its Secret holds
// another kubeconfig or is adjusted.
func (s *Sandbox) storeKubeconfig(ctx context.Context, c *Cluster, o ClusterOptions) error {
	var mutate []func(*corev1.Secret)
	if o.Secret != nil {
		mutate = append(mutate, o.Secret)
	}
	if !c.ownWorkload || o.Kubeconfig != nil || o.Secret != nil {
		data := c.Workload.Kubeconfig
		if o.Kubeconfig != nil {
			var err error
			if data, err = o.Kubeconfig(c.Workload); err != nil {
				return fmt.Errorf("building the kubeconfig of %s/%s: %w", o.Namespace, o.Name, err)
			}
		}
		if err := s.Management.StoreKubeconfig(ctx, o.Namespace, o.Name, data, mutate...); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops what the Cluster does not share: its own simulator and, when
// CreateCluster started it, its workload control plane and what runs its
// Jobs. With Options.CAPI its simulator is the infrastructure provider's,
// and stops with the sandbox.
// Its objects in the management cluster stay. Sandbox.Stop stops the
// Clusters not stopped before.
func (c *Cluster) Stop() error {
	s := c.sb
	s.mu.Lock()
	n := len(s.clusters)
	s.clusters = slices.DeleteFunc(s.clusters, func(o *Cluster) bool { return o == c })
	stopped := len(s.clusters) == n
	s.mu.Unlock()
	if stopped {
		return nil
	}
	var errs []error
	if c.ownSimulator {
		errs = append(errs, c.Simulator.Close())
	}
	if c.ownWorkload {
		errs = append(errs, s.releaseWorkload(c))
	}
	return errors.Join(errs...)
}

// OptIn labels the Cluster with the TalosUpgradePolicy policy: the policy
// controller then creates its TalosUpgrade.
func (c *Cluster) OptIn(ctx context.Context, policy string) error {
	if err := c.patchLabels(ctx, func(labels map[string]string) { labels[upgradev1.PolicyLabel] = policy }); err != nil {
		return fmt.Errorf("opting Cluster %s/%s in to TalosUpgradePolicy %q: %w", c.Namespace, c.Name, policy, err)
	}
	return nil
}

// OptOut removes the Cluster's policy label: the Cluster leaves its
// TalosUpgradePolicy.
func (c *Cluster) OptOut(ctx context.Context) error {
	if err := c.patchLabels(ctx, func(labels map[string]string) { delete(labels, upgradev1.PolicyLabel) }); err != nil {
		return fmt.Errorf("taking Cluster %s/%s out of its TalosUpgradePolicy: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// patchLabels reads the Cluster, changes its labels and patches them.
func (c *Cluster) patchLabels(ctx context.Context, change func(map[string]string)) error {
	mgmt := c.sb.Management.Client
	cluster := c.Fixture.Cluster.DeepCopy()
	if err := mgmt.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
		return fmt.Errorf("reading Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	if cluster.Labels == nil {
		cluster.Labels = map[string]string{}
	}
	change(cluster.Labels)
	return mgmt.Patch(ctx, cluster, patch)
}

// Upgrade reads the TalosUpgrade of Cluster namespace/name; it is named
// after the Cluster.
func (s *Sandbox) Upgrade(ctx context.Context, namespace, clusterName string) (*upgradev1.TalosUpgrade, error) {
	u := &upgradev1.TalosUpgrade{}
	if err := s.Management.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, u); err != nil {
		return nil, fmt.Errorf("reading TalosUpgrade %s/%s: %w", namespace, clusterName, err)
	}
	return u, nil
}
