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

// Package bench measures what Tollgate costs on top of the reboots it
// orders: the controller's own time per Machine (overhead.go), a fleet of
// Clusters rolled out under maxClustersInProgress or created converged
// (fleet.go: memory, workload connections, CPU per Machine upgraded), a
// restart over the converged fleet (coldstart.go), its API traffic once
// everything has converged (idle.go), how long the policy and Cluster
// webhooks take with the fleet present (admission.go), how each figure
// grows with the fleet (growth.go), and how long its reconciles take while
// every installer pull is slow (pull.go). A converged fleet can also be
// split into shards, one controller process per --watch-filter, each
// measured alone (shards.go). Scenario 6 (inplace.go) compares the two ways
// a Talos upgrade reaches a Cluster's workers, a policy and CAPI's in-place
// update through Tollgate's extension, in a sandbox of its own that runs
// CAPI core and an in-process manager (CAPI core at a fleet's size would
// measure CAPI rather than Tollgate; the fleet scenarios make their Machines
// directly). Scenario 7 (kubernetes.go, BenchmarkKubernetes) measures
// Kubernetes upgrades in place in such a sandbox without CAPI core: a
// Kubernetes-only rollout against the static Pods' and kubelets' restarts
// it must wait for, and a Talos hop planned with a Kubernetes minor against
// the two rollouts it saves; `make bench` runs it after the program, as a
// Go benchmark. Scenario 8 (channel.go) moves a release through the four
// stages of a ReleaseChannel over 1,000 converged Clusters: how soon each
// gate opens once the stage before passed, how soon the stage's rollouts
// carry the release, and the channel's requests once everything is at
// rest. Figures come from the
// controller's /metrics where it has them (metrics.go, sample.go), from the
// counting proxy for requests, and from the bench's own informers for the
// fleet's progress (observe.go). It is run by `make bench` through the
// program in test/cmd/bench.
//
// The world (world.go) is a test/framework/sandbox one: envtest apiservers for the
// management and workload clusters, one Talos simulator shared by every
// Cluster, a Job driver on the first workload apiserver while scenario 1
// runs its health checks, and an in-process OCI registry for the installer
// image. The controller is the production binary (main.go, built by
// sandbox.BuildManager into out/bench) run as its own process, so that its
// memory is measured alone.
//
// Every request of the controller goes through a counting reverse proxy
// (Proxy): the controller's kubeconfig and every Cluster's kubeconfig Secret
// point at it. The proxy counts requests by cluster, verb and resource, and
// gives each Cluster a view of a shared workload apiserver that holds only
// its own Nodes (a label selector added to Node lists and watches), so that
// many Clusters can share one apiserver without each caching the others'
// Nodes.
package bench
