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

// Package uninstall tests what becomes of Cluster API's deletions when
// Tollgate goes away: Tollgate keeps CAPI's pre-drain deletion hook
// (hooks.DeletionHookAnnotation) on every Machine of an opted-in Cluster,
// and only Tollgate removes it.
//
// Each test runs a world of its own: the sandbox with Cluster API core, the
// test providers and Tollgate's webhooks (test/framework/sandbox with
// Options.CAPI and Options.Webhooks), and Tollgate's manager (cmd/manager,
// as main.go builds it) with leader election in tollgate-system, as
// config/manager runs it, serving the webhooks. The kubectl plugin is built
// from cmd/kubectl-tollgate and run as a user runs it, as its own process
// with an administrator's kubeconfig.
//
//   - Uninstalled as the book says (operations/upgrading-tollgate.md):
//     the Cluster leaves its policy while Tollgate runs, which releases its
//     hooks; then Tollgate is removed as `clusterctl delete --addon
//     tollgate` removes it (its manager stops, its webhook configurations
//     go: test/integration/clusterctl's TestDeleteAddon checks what
//     clusterctl deletes). CAPI's deletions then wait for nothing.
//   - Stopped abruptly: its hooks stay, and CAPI's deletion of a Machine
//     waits; kubectl tollgate release-hooks refuses while Tollgate's Lease
//     is held, then releases, audited; a Tollgate that comes back puts its
//     hook back on the Machines not being deleted.
//
// In both, the Cluster is then deleted. CAPI does not wait for pre-drain
// hooks when it deletes a whole Cluster (its Machine controller's
// isDeleteNodeAllowed), so that deletion completes either way; the tests
// check it.
//
// What is played by the tests: envtest runs no garbage collector, and the
// stand-in of the Talos control-plane provider leaves its Machines to it
// (the real provider deletes them in its own reconcileDelete, holding its
// finalizer until they are gone, which keeps the Cluster until then). The
// tests delete the Machines whose TalosControlPlane is gone, and hold the
// Cluster with a finalizer of their own until its Machines are gone, so
// that CAPI deletes them while their Cluster exists, as with the real
// provider.
package uninstall
