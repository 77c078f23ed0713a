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

// Package talosconfig is the TalosConfig controller of the stand-in Talos
// bootstrap provider. It follows the real provider's TalosConfigReconciler
// (siderolabs/cluster-api-bootstrap-provider-talos,
// controllers/talosconfig_controller.go, Reconcile, at v0.6.12 and
// v0.7.0-alpha.2): once CAPI's Machine controller owns a TalosConfig and the
// Cluster's infrastructure is provisioned (all the real provider waits for:
// a worker's configuration is written before the control plane is
// initialized), it generates a real Talos machine configuration of the
// TalosConfig's generateType for the Cluster with Talos' own generator
// (pkg/machinery/config/generate), applies its configPatches and
// strategicPatches, writes it to the bootstrap data Secret named after the
// TalosConfig (type cluster.x-k8s.io/secret, key value, format talos, owned
// by the TalosConfig) and sets status.ready and status.dataSecretName, which
// CAPI core reads under the v1beta1 contract. A Machine that names its data
// already (after a move) has it taken as the TalosConfig's.
//
// As the real one, it owns its conditions (DataSecretAvailable and their
// Ready summary, patched with patch.WithOwnedV1Beta1Conditions) and marks a
// ready TalosConfig available on every reconcile: a reconcile that read the
// TalosConfig from a cache lagging its own last write would otherwise leave
// a waiting condition behind a ready status, which CAPI mirrors into the
// Machine's BootstrapConfigReady and a MachineDeployment then counts as
// unavailable for good.
//
// Every machine of a Cluster shares one secrets bundle (its PKI and
// tokens), kept in the Secret <cluster>-talos as the real provider keeps
// it. The bootstrap data is written once: a later change of the spec does
// not rewrite it, and the stand-in's webhook (../../webhooks) refuses one,
// as the real provider's does.
//
// What it does not do, unlike the real provider: write the
// <cluster>-talosconfig Secret (the test worlds' Talos nodes are
// simulated, with the simulator's own PKI and talosconfig), act on
// spec.hostname, or fill the deprecated status.talosConfig.
package talosconfig
