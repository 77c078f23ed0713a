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

// Package v1alpha1 contains the infrastructure.cluster.x-k8s.io/v1alpha1 API
// of the Talos-simulator infrastructure provider, a test provider whose
// machines are simulated Talos nodes (test/talossim).
//
// TalosSimCluster, TalosSimMachine and TalosSimMachineTemplate keep CAPI's
// v1beta2 infrastructure contract: their CRDs carry the label
// cluster.x-k8s.io/v1beta2: v1alpha1, an InfraCluster reports
// status.initialization.provisioned and status.failureDomains, an
// InfraMachine reports spec.providerID, status.addresses,
// status.failureDomain and status.initialization.provisioned, and both
// report a Ready condition that CAPI mirrors into the Cluster's and the
// Machine's InfrastructureReady.
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1alpha1
