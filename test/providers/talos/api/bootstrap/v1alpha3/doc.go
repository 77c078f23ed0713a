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

// Package v1alpha3 contains the bootstrap.cluster.x-k8s.io/v1alpha3 API of
// the stand-in for the Talos bootstrap provider (CABPT,
// siderolabs/cluster-api-bootstrap-provider-talos), whose Go module the
// module proxy of Tollgate's test environment does not serve.
//
// TalosConfig and TalosConfigTemplate keep the real provider's group,
// kinds, and the v1alpha3 fields Tollgate's templates and code use, with
// the real JSON names and types (a test walks both schemas). Their CRDs
// carry the label cluster.x-k8s.io/v1beta1: v1alpha3, so CAPI core holds
// them to its v1beta1 bootstrap contract: it reads status.ready and
// status.dataSecretName, and mirrors the Ready condition. That is the
// contract the real v1alpha3 kinds keep: they have no
// status.initialization.dataSecretCreated (only the real provider's
// v1beta1 kinds do, under the v1beta2 contract), and CAPI v1.14 still
// reads a v1beta1-contract provider (internal/contract GetCompatibleVersions),
// so keeping the real v1alpha3 fields means the v1beta1 contract.
// Conditions are CAPI's v1beta1 conditions (with a severity), as the real
// v1alpha3 status has them.
//
// +kubebuilder:object:generate=true
// +groupName=bootstrap.cluster.x-k8s.io
package v1alpha3
