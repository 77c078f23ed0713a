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

package builder

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterFixture describes a Talos cluster to create: a CAPI Cluster with
// control-plane and worker Machines, and the matching workload Nodes.
type ClusterFixture struct {
	// Namespace and Name of the Cluster.
	Namespace, Name string
	// Policy is the TalosUpgradePolicy the Cluster opts in to; none when empty.
	Policy string
	// ControlPlanes and Workers are the numbers of Machines.
	ControlPlanes, Workers int
	// TalosVersion is the version every node runs; DefaultTalosVersion when empty.
	TalosVersion string
	// KubernetesVersion is the version every node runs; DefaultKubernetesVersion when empty.
	KubernetesVersion string
	// MachineDeployment is the name of the workers' MachineDeployment;
	// "<name>-md-0" when empty.
	MachineDeployment string
	// Address returns the InternalIP of the i-th Machine named machine; no
	// address when nil.
	Address func(i int, machine string) string
	// NodeName returns the node name of a Machine; the Machine's name when nil.
	NodeName func(machine string) string
	// ClusterOptions, MachineOptions and NodeOptions are applied to every
	// object.
	ClusterOptions []ClusterOption
	MachineOptions []MachineOption
	NodeOptions    []NodeOption
}

// Fixture is what Create made.
type Fixture struct {
	Cluster  *clusterv1.Cluster
	Machines []*clusterv1.Machine
	Nodes    []*corev1.Node
}

// Create creates the Cluster and its Machines (with status) in the management
// cluster and, when workload is not nil, the Nodes in the workload cluster.
func Create(ctx context.Context, mgmt, workload client.Client, f ClusterFixture) (*Fixture, error) {
	talos := orDefault(f.TalosVersion, DefaultTalosVersion)
	k8s := orDefault(f.KubernetesVersion, DefaultKubernetesVersion)
	md := orDefault(f.MachineDeployment, f.Name+"-md-0")

	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Namespace %s: %w", f.Namespace, err)
	}
	opts := f.ClusterOptions
	if f.Policy != "" {
		opts = append([]ClusterOption{WithPolicy(f.Policy)}, opts...)
	}
	out := &Fixture{Cluster: Cluster(f.Namespace, f.Name, opts...)}
	if err := mgmt.Create(ctx, out.Cluster); err != nil {
		return nil, fmt.Errorf("creating Cluster %s/%s: %w", f.Namespace, f.Name, err)
	}
	// A provisioned, initialized Cluster, as CAPI reports it; CAPI's
	// ClusterCache connects only to provisioned Clusters.
	out.Cluster.Status.Initialization = clusterv1.ClusterInitializationStatus{
		InfrastructureProvisioned: ptrTo(true),
		ControlPlaneInitialized:   ptrTo(true),
	}
	if err := mgmt.Status().Update(ctx, out.Cluster); err != nil {
		return nil, fmt.Errorf("writing the status of Cluster %s/%s: %w", f.Namespace, f.Name, err)
	}

	for i := range f.ControlPlanes + f.Workers {
		cp := i < f.ControlPlanes
		name := fmt.Sprintf("%s-cp-%d", f.Name, i)
		if !cp {
			name = fmt.Sprintf("%s-worker-%d", f.Name, i-f.ControlPlanes)
		}
		node := name
		if f.NodeName != nil {
			node = f.NodeName(name)
		}
		mopts := []MachineOption{WithTalosVersion(talos), WithKubernetesVersion(k8s), WithNodeName(node)}
		nopts := []NodeOption{WithNodeOSImage(talos)}
		if cp {
			mopts = append(mopts, WithControlPlane())
			nopts = append(nopts, WithNodeControlPlane())
		} else {
			mopts = append(mopts, WithMachineDeployment(md))
		}
		if f.Address != nil {
			if addr := f.Address(i, name); addr != "" {
				mopts = append(mopts, WithAddress(addr))
			}
		}
		m := Machine(f.Namespace, name, f.Name, append(mopts, f.MachineOptions...)...)
		m.Status.NodeInfo.KubeletVersion = k8s
		if err := CreateMachine(ctx, mgmt, m); err != nil {
			return nil, err
		}
		out.Machines = append(out.Machines, m)

		if workload != nil {
			n := Node(node, append(nopts, f.NodeOptions...)...)
			n.Status.NodeInfo.KubeletVersion = k8s
			if err := CreateNode(ctx, workload, n); err != nil {
				return nil, err
			}
			out.Nodes = append(out.Nodes, n)
		}
	}
	return out, nil
}

// CreateMachine creates m and then writes its status, which the create call
// ignores. A controller may change the Machine in between (Tollgate adds its
// deletion hook to every Machine of an opted-in Cluster): the status is then
// written on the Machine as it is now, a few times at most.
func CreateMachine(ctx context.Context, c client.Client, m *clusterv1.Machine) error {
	status := m.Status
	if err := c.Create(ctx, m); err != nil {
		return fmt.Errorf("creating Machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	m.Status = status
	for attempt := 1; ; attempt++ {
		err := c.Status().Update(ctx, m)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == 5 {
			return fmt.Errorf("writing the status of Machine %s/%s: %w", m.Namespace, m.Name, err)
		}
		latest := &clusterv1.Machine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), latest); err != nil {
			return fmt.Errorf("reading Machine %s/%s again to write its status: %w", m.Namespace, m.Name, err)
		}
		latest.Status = status
		*m = *latest
	}
}

// CreateNode creates n and then writes its status, which the create call
// ignores.
func CreateNode(ctx context.Context, c client.Client, n *corev1.Node) error {
	status := n.Status
	if err := c.Create(ctx, n); err != nil {
		return fmt.Errorf("creating Node %s: %w", n.Name, err)
	}
	n.Status = status
	if err := c.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("writing the status of Node %s: %w", n.Name, err)
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
