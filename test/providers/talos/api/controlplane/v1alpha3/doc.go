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

// Package v1alpha3 contains the controlplane.cluster.x-k8s.io/v1alpha3 API
// of the stand-in for the Talos control-plane provider (CACPPT,
// siderolabs/cluster-api-control-plane-provider-talos), whose Go module
// the module proxy of Tollgate's test environment does not serve.
//
// TalosControlPlane keeps the real provider's group, kind, and the fields
// Tollgate's templates and code use, with the real JSON names and types (a
// test walks both schemas). Its CRD carries the label
// cluster.x-k8s.io/v1beta1: v1alpha3, the contract of the real v1alpha3
// kind: CAPI core reads spec.replicas, spec.version, status.initialized,
// status.replicas, status.readyReplicas, status.unavailableReplicas,
// status.version and status.selector (and the scale subresource) as its
// v1beta1 control-plane contract says. The real kind has no
// status.updatedReplicas, so neither has the stand-in (CAPI only displays
// it). Conditions are CAPI's v1beta1 conditions, as the real status has
// them.
//
// +kubebuilder:object:generate=true
// +groupName=controlplane.cluster.x-k8s.io
package v1alpha3
