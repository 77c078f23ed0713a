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
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Workload is a workload control plane and the Job driver that runs its
// Jobs. Several Clusters may share one (ClusterOptions.Workload).
type Workload struct {
	*envtest.Workload

	// Driver plays the Job controller and the kubelet; script the outcome
	// of health-check and hook Jobs with Driver.Script.
	Driver *jobdriver.Driver

	stopDriver context.CancelFunc
}

// ClusterOptions describe a Cluster for CreateCluster.
type ClusterOptions struct {
	// Namespace and Name of the CAPI Cluster. The namespace is created.
	Namespace, Name string

	// ControlPlanes and Workers are the numbers of Machines, named
	// <name>-cp-<i> and <name>-worker-<i>, each with a Node of that name.
	ControlPlanes, Workers int

	// TalosVersion is the version every node runs;
	// builder.DefaultTalosVersion when empty.
	TalosVersion string

	// Policy, when set, is the TalosUpgradePolicy the Cluster opts in to,
	// once its Machines, Nodes and talosconfig exist. With webhooks, the
	// policy must exist first. Cluster.OptIn does it later.
	Policy string

	// Workload is the workload control plane to put the Nodes in, shared
	// with other Clusters; a new one is started when nil.
	Workload *Workload

	// MachineOptions and ClusterOptions are applied to every Machine and
	// to the Cluster.
	MachineOptions []builder.MachineOption
	ClusterOptions []builder.ClusterOption
}

// Cluster is a CAPI Cluster of simulated Talos nodes.
type Cluster struct {
	// Namespace and Name of the CAPI Cluster.
	Namespace, Name string

	// Workload is the workload control plane holding the Nodes.
	Workload *Workload

	// Simulator runs the Cluster's Talos nodes, one per Machine.
	Simulator *talossim.Simulator

	// Fixture holds the Cluster, Machines and Nodes as created.
	Fixture *builder.Fixture

	mgmt client.Client
}

// StartWorkload starts a workload control plane and its Job driver, and
// stores its kubeconfig as the <clusterName>-kubeconfig Secret of
// namespace. CreateCluster calls it unless given a Workload.
func (s *Sandbox) StartWorkload(ctx context.Context, namespace, clusterName string) (*Workload, error) {
	start := time.Now()
	w, err := s.Management.StartWorkload(ctx, namespace, clusterName)
	if err != nil {
		return nil, fmt.Errorf("starting the workload control plane of %s/%s: %w", namespace, clusterName, err)
	}
	driverCtx, cancel := context.WithCancel(context.Background())
	wl := &Workload{Workload: w, Driver: jobdriver.New(w.Client, jobdriver.Options{Delay: s.opts.JobDelay}), stopDriver: cancel}
	wl.Driver.Start(driverCtx)
	s.mu.Lock()
	s.workloads = append(s.workloads, wl)
	s.mu.Unlock()
	s.logf("Started the workload control plane of Cluster %s/%s (kube-apiserver %s) in %s", namespace, clusterName, w.Config.Host, since(start))
	return wl, nil
}

// CreateCluster creates a Cluster the way CAPI and the Talos providers
// leave it: a provisioned CAPI Cluster with its Machines (addresses,
// versions, node refs), a Ready Node per Machine in the workload cluster, a
// simulated Talos node per Machine reachable at the Machine's address, and
// the <cluster>-talosconfig and <cluster>-kubeconfig Secrets. Then, when
// o.Policy is set, the Cluster opts in to it.
func (s *Sandbox) CreateCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Namespace == "" || o.Name == "" || o.ControlPlanes+o.Workers == 0 {
		return nil, fmt.Errorf("a sandbox Cluster needs a namespace, a name and at least one Machine, got %q/%q with %d+%d", o.Namespace, o.Name, o.ControlPlanes, o.Workers)
	}
	if o.TalosVersion == "" {
		o.TalosVersion = builder.DefaultTalosVersion
	}
	w := o.Workload
	if w == nil {
		var err error
		if w, err = s.StartWorkload(ctx, o.Namespace, o.Name); err != nil {
			return nil, err
		}
	}
	sim, err := talossim.New(talossim.Options{
		Port:           s.opts.TalosAPIPort,
		RebootDuration: s.opts.RebootDuration,
		NodeUpdater:    &talossim.KubeNodeUpdater{Client: w.Client},
	})
	if err != nil {
		return nil, fmt.Errorf("starting the Talos simulator of %s/%s: %w", o.Namespace, o.Name, err)
	}
	c := &Cluster{Namespace: o.Namespace, Name: o.Name, Workload: w, Simulator: sim, mgmt: s.Management.Client}
	s.mu.Lock()
	s.clusters = append(s.clusters, c)
	s.mu.Unlock()

	addresses := map[string]string{}
	for i := range o.ControlPlanes + o.Workers {
		node := fmt.Sprintf("%s-cp-%d", o.Name, i)
		if i >= o.ControlPlanes {
			node = fmt.Sprintf("%s-worker-%d", o.Name, i-o.ControlPlanes)
		}
		n, err := sim.AddNode(talossim.NodeConfig{Name: node, Version: o.TalosVersion, ControlPlane: i < o.ControlPlanes})
		if err != nil {
			return nil, fmt.Errorf("starting the simulated Talos node %s: %w", node, err)
		}
		addresses[node] = n.Address()
	}
	c.Fixture, err = builder.Create(ctx, s.Management.Client, w.Client, builder.ClusterFixture{
		Namespace: o.Namespace, Name: o.Name, ControlPlanes: o.ControlPlanes, Workers: o.Workers,
		TalosVersion: o.TalosVersion, MachineOptions: o.MachineOptions, ClusterOptions: o.ClusterOptions,
		Address: func(_ int, machine string) string { return addresses[machine] },
	})
	if err != nil {
		return nil, err
	}
	if o.Workload != nil {
		// The workload was started for another Cluster: store its
		// kubeconfig for this one too.
		if err := s.Management.StoreKubeconfig(ctx, o.Namespace, o.Name, w.Kubeconfig); err != nil {
			return nil, err
		}
	}
	secret, err := sim.TalosConfigSecret(o.Namespace, o.Name)
	if err != nil {
		return nil, fmt.Errorf("building the talosconfig of %s/%s: %w", o.Namespace, o.Name, err)
	}
	if err := s.Management.Client.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	s.logf("Created Cluster %s/%s: %d control-plane and %d worker Machines on Talos %s, a simulated Talos node each", o.Namespace, o.Name, o.ControlPlanes, o.Workers, o.TalosVersion)
	if o.Policy != "" {
		if err := c.OptIn(ctx, o.Policy); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// OptIn labels the Cluster with the TalosUpgradePolicy policy: the policy
// controller then creates its TalosUpgrade.
func (c *Cluster) OptIn(ctx context.Context, policy string) error {
	cluster := c.Fixture.Cluster.DeepCopy()
	if err := c.mgmt.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
		return fmt.Errorf("reading Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	if cluster.Labels == nil {
		cluster.Labels = map[string]string{}
	}
	cluster.Labels[upgradev1.PolicyLabel] = policy
	if err := c.mgmt.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("opting Cluster %s/%s in to TalosUpgradePolicy %q: %w", c.Namespace, c.Name, policy, err)
	}
	return nil
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

// Clusters returns the Clusters created so far.
func (s *Sandbox) Clusters() []*Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Cluster(nil), s.clusters...)
}
