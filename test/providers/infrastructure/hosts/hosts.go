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

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Hosts runs the simulated machines.
type Hosts interface {
	// Boot starts the simulated Talos node of a machine unless it runs
	// already, and returns what it is now. Booting a machine that runs is
	// no error and changes nothing.
	Boot(ctx context.Context, h Host) (Booted, error)
	// Remove stops the node of machine name of cluster; removing an
	// unknown one is no error.
	Remove(ctx context.Context, cluster client.ObjectKey, name string) error
}

// Host is a machine to boot.
type Host struct {
	// Cluster is the CAPI Cluster the machine belongs to.
	Cluster client.ObjectKey
	// Name is the machine's name: the TalosSimMachine's, the node's
	// hostname and the name of its workload Node.
	Name string
	// Version is the Talos version the machine boots, such as "v1.12.4".
	Version string
	// Schematic is the Image Factory schematic it boots, "" for none.
	Schematic string
	// ControlPlane is true for a control-plane machine, an etcd member.
	ControlPlane bool
	// KubernetesVersion is the Kubernetes version the machine's
	// configuration runs (its Machine's spec.version): its kubelet reports
	// it, and a control-plane machine's static Pods, to the workload
	// cluster. "" leaves Kubernetes unreported.
	KubernetesVersion string
	// BootstrapData is the machine's configuration, from its bootstrap
	// data Secret. The simulator needs none of it, but a machine is never
	// booted without it.
	BootstrapData []byte
	// Workload is a client of the Cluster's workload cluster, where the
	// node's kubelet reports its Node (NotReady while it reboots, Ready
	// with its version after); nil while the workload cluster is not
	// known, in which case reboots update no Node.
	Workload client.Client
}

// Booted is what a machine's node is when Boot returns.
type Booted struct {
	// Address is the node's IP address, at which its Talos API listens.
	Address string
	// Version is the Talos version the node runs now, which differs from
	// Host.Version once it was upgraded.
	Version string
}
