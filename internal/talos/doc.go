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

// Package talos is Tollgate's narrow view of the Talos API.
//
// It holds:
//
//   - Client, the handful of node calls a rollout makes (version, boot ID,
//     schematic, upgrade, reboot, etcd health, the machine configuration
//     read back and applied), and Dialer, which opens
//     a Client to the node of a CAPI Machine with the credentials of the
//     <cluster>-talosconfig Secret written by the Talos bootstrap provider.
//     NewDialer is the production Dialer over the machinery gRPC client;
//     every call runs under its own timeout, and failures map to the typed
//     errors of this package (ErrTLS, ErrUnreachable, ...).
//     Which upgrade API a node gets is read from the node: Upgrade makes the
//     self-rebooting call of a node before Talos 1.13 only when the caller
//     allows it (UpgradeOptions), and returns ErrRebootsItself otherwise.
//   - The version rules shared by the webhooks, internal/plan and the
//     controller: ParseVersion, CanonicalVersion, SameVersion, CheckKnown,
//     VersionFromOSImage, CheckUpgradeStep, CheckKubernetesSupported,
//     CheckTargets and CheckKubernetesKnown (what a plan's targets can be
//     judged by without a Cluster), IsStableRelease, SuggestIntermediate,
//     UsesLifecycleAPI.
//   - Installer image resolution (InstallerImage) and the existence check of
//     an installer image in its registry (CheckImage).
//
// The Talos node simulator in test/talossim serves the same gRPC API over
// mTLS, so the code here is tested exactly as it runs in production.
package talos
