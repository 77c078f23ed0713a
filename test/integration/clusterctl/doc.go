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

// Package clusterctl runs clusterctl, with its own client library
// (sigs.k8s.io/cluster-api/cmd/clusterctl/client at the CAPI version of
// go.mod), against what a Tollgate release ships, as a user runs it: the
// output of `make release-manifests` is served from a local file://
// provider repository, `clusterctl generate provider --addon tollgate` reads
// it, `clusterctl init --addon tollgate` installs it into an envtest
// management cluster, `clusterctl upgrade plan` reads it back, and
// `clusterctl generate cluster --from templates/cluster-template-talos.yaml`
// renders a Cluster that is applied server-side against the Talos providers'
// CRDs.
//
// NewClient builds clusterctl's client the way the clusterctl command does,
// except that it accepts the unversioned kube-apiserver that
// hack/envtest-assets.sh builds from source; test/integration/move uses it too.
//
// What is stood in, and only where clusterctl allows it:
//   - cert-manager: the management cluster has cert-manager's API (the
//     Issuer and Certificate CRDs of testdata/cert-manager, open schemas) but
//     no cert-manager. clusterctl init checks cert-manager by creating its
//     test Issuer and Certificate; they are accepted, so clusterctl skips
//     installing cert-manager, as it does when cert-manager is already there.
//     Nothing issues Tollgate's serving certificate.
//   - the CAPI core provider: `clusterctl init` first installs cluster-api
//     v1.14.2 from the same local repository, made of CAPI's own
//     metadata.yaml and its core CRDs from the module (no controllers), with
//     the bootstrap and control-plane providers left out ("-").
//   - the namespace controller: envtest runs no kube-controller-manager, so
//     the Namespace of clusterctl's cert-manager check, which clusterctl
//     deletes after each check, is finalized by the test before the next
//     `clusterctl init`.
//   - no Pod runs: clusterctl does not wait for the providers (its default),
//     and the webhook configurations it installs point at a Service with no
//     Pods; the generated Cluster is admitted because Tollgate's Cluster
//     webhook fails open (failurePolicy Ignore), as it does in a cluster
//     whose manager is down.
package clusterctl
