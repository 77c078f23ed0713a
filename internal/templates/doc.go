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

// Package templates reads the objects of providers that a Cluster's CAPI
// objects name by group and kind: its control plane, the InfraMachine and
// bootstrap templates its new Machines are made from. CAPI's v1beta2
// references carry no version, so Reader finds the version the apiserver
// prefers (its RESTMapper) and remembers for a while the kinds no CRD serves
// (KindCache), so that a fleet naming a provider that is not installed
// (yet) does not ask the apiserver's discovery in every reconcile.
//
// MachineTemplates reads which Talos each template of the Cluster's new
// Machines boots; the TemplatesOnTarget condition is computed from them in
// internal/disruption (TemplatesCondition). ControlPlaneConfigTarget and
// MachineDeploymentConfigTargets read the machine configuration patches
// the nodes should run, from the templates whose Machines are not replaced
// when they change (configtargets.go). Tollgate never writes a template:
// they live in the users' Git.
package templates
