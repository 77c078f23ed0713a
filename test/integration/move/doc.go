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

// Package move tests `clusterctl move` of a management cluster in the
// middle of a rollout, with clusterctl's own move code (the
// sigs.k8s.io/cluster-api/cmd/clusterctl/client library), between two
// envtest management clusters that each run Cluster API core, the test
// providers (test/framework/sandbox with Options.CAPI, one cloud of simulated
// machines shared through Options.Hosts) and Tollgate's manager with its
// webhooks: CAPI's controllers in the target rebuild the status move drops.
package move
