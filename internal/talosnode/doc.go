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

// Package talosnode is what the TalosUpgrade controller reads from and does
// to a node over its Talos API: the effects and reads of the steps
// internal/disruption decides, each a short sequence of calls of the narrow
// client of internal/talos.
//
// Every call to a node goes through one helper, Nodes.With, which dials
// the node (talos.Dialer), runs the calls and closes the client, so that
// no client is left open and no error of closing one is dropped unseen.
// On it are built the node's reads (ReadNode before a Machine starts,
// ReadDrained, ReadBoot, EtcdHealthy, InstallerImages and
// KubeletRepository for the preflight) and its acts (ApplyConfig, Reboot,
// and the upgrade call).
//
// The upgrade call lasts as long as the node pulls and installs its image,
// so UpgradeCalls makes it outside of the reconcile workers and keeps its
// outcome until the next reconcile reads it (UpgradeCalls.View). The
// controller writes the intent of each act to the rollout's status before
// it asks for it; nothing here writes to the management cluster.
package talosnode
