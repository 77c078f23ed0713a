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

// Package v1alpha1 contains the upgrade.tollgate.dev/v1alpha1 API.
//
// Users write TalosUpgradePolicy objects, naming a target Talos version and
// the rules of a rollout, and ClusterHealthCheck objects, Jobs that must pass
// in a workload cluster before a machine is taken down. A CAPI Cluster opts in
// to a policy with the label upgrade.tollgate.dev/policy. The controller
// creates one TalosUpgrade per selected Cluster and records in its status the
// progress of every Machine.
//
// +kubebuilder:object:generate=true
// +groupName=upgrade.tollgate.dev
package v1alpha1
