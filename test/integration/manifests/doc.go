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

// Package manifests tests what Tollgate ships besides its binary: every
// kustomization under config/ and templates/ is rendered with the kustomize
// Go API (the code behind `kustomize build`), the clusterctl template is
// processed as `clusterctl generate cluster` does, and every object is
// server-side dry-run applied to an envtest apiserver that has Tollgate's,
// CAPI's and the Talos providers' CRDs. The tests also hold the manager
// Deployment to the Pod Security restricted profile and the RBAC to least
// privilege.
package manifests
