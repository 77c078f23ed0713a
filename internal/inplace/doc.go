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

// Package inplace is Tollgate's in-place update extension for Cluster API
// (feature gates InPlaceUpdates and RuntimeSDK): it decides which changes of
// CAPI's desired state Tollgate makes on a running Talos node instead of
// CAPI replacing the Machine (CanUpdateMachineSet, CanUpdateMachine), reads
// which Machines CAPI handed over and what they ask (ReadHandover), and
// tells CAPI how far each update went (UpdateMachine).
//
// Once CAPI moved a Machine to be updated in place it never falls back to
// replacing it, so a capability answer claims a change only when Tollgate
// will finish it. The decision is read live, decided purely, answered:
//
//   - the fields (fieldsPass): the change must consist of fields Tollgate
//     claims (Claims): the image field of an InfraMachine kind Tollgate knows
//     (talosimage.Kinds), the Kubernetes version of a worker Machine; what
//     else changes is named and left to CAPI;
//   - the world (readWorld, then judge): the Machines' Cluster exists, its
//     namespace opts in, a TalosUpgradePolicy selects it and installs what
//     the change asks (its own target with targetFrom: Policy; an image of
//     its installer, whose Talos version the image names or its template
//     declares, with targetFrom: CAPI), and the providers admit CAPI's write
//     of the desired InfraMachine and BootstrapConfig: a server-side dry-run
//     of each, on a Machine of the current MachineSet, as KCP asks before it
//     claims an update in place (CAPI PR #13640).
//
// Anything else is answered "no" (Success without patches), and CAPI
// replaces the Machines. Only a request that cannot be read is a Failure,
// which CAPI retries. Replaced asks the same decision before CAPI acts, for
// the InPlaceUpdatesReady condition of a rollout (Readiness), which also
// says whether CAPI calls the extension at all: discovered, serving the
// Cluster's namespace, alone.
package inplace
