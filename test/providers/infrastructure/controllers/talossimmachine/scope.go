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

package talossimmachine

import (
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
)

// scope is what one reconcile of a machine knows.
type scope struct {
	// tsm is the machine (a TalosSimMachine or a TalosSimCloudMachine);
	// its spec and status are patched when the reconcile ends.
	tsm Object
	// machine is its owner Machine, read before the phases; nil until the
	// Machine controller sets the owner reference.
	machine *clusterv1.Machine
	// cluster is the Machine's Cluster, read before the phases.
	cluster *clusterv1.Cluster
	// infraCluster is the Cluster's TalosSimCluster, read before the
	// phases; nil when the Cluster names another infrastructure or it is
	// gone.
	infraCluster *infrav1.TalosSimCluster

	// bootstrapData is the machine's configuration, filled by
	// reconcileBootstrapData; nil once the machine is provisioned.
	bootstrapData []byte
	// os is what the machine boots, filled by reconcileImage.
	os hosts.OS
	// failureDomain is where the machine is placed, filled by
	// reconcileImage.
	failureDomain string
	// workload is a client of the workload cluster, filled by reconcileHost;
	// nil while the Cluster's kubeconfig Secret does not exist.
	workload client.Client
	// booted is the machine's node, filled by reconcileHost.
	booted hosts.Booted
	// nodeRegistered is set by reconcileNode once the Node is registered.
	nodeRegistered bool

	// notReady, when set by a phase, is why the machine is not Ready; the
	// phases after it do not run.
	notReady *reason
}

// reason is the reason and message of a Ready condition that is not True.
type reason struct {
	reason, message string
}

// wait records why the machine is not Ready.
func (s *scope) wait(r, message string) {
	s.notReady = &reason{reason: r, message: message}
}
