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

// Package inventory keeps, for every Cluster of the management cluster, the
// versions it and its Machines run (plan.ClusterVersions), and the Clusters
// of every policy, up to date from the manager's informers of Clusters and
// Machines.
//
// The TalosUpgradePolicy webhook checks a plan against every Cluster that
// selects the policy. Listed from the cache, a policy of 1,000 Clusters of 10
// Machines is 1,000 indexed lists and 10,000 Machines copied into them for
// every admission, and their garbage; from the inventory it is 1,000 small
// records made once per change of a Cluster or a Machine, and a map lookup.
// The records point into the cache (the informer's own objects, never
// changed), so the inventory costs a map entry per object, not a copy.
//
// Inventory is fed by informers (Watch) and is what the manager uses; Lister
// answers the same questions by listing through a client.Reader by the
// field indexes of package index, for a caller without informers (a fake
// client in tests). Both are a Reader.
package inventory
