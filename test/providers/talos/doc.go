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

// Package talos holds stand-ins for the Talos CAPI bootstrap
// provider (CABPT) and control-plane provider (CACPPT), for Tollgate's test
// worlds: the Go module proxy of the test environment serves neither real
// module (cluster-api-bootstrap-provider-talos v0.7.0-alpha.2,
// cluster-api-control-plane-provider-talos v0.5.12).
//
// They keep the real group, kinds and v1alpha3 fields Tollgate's templates
// use (api/bootstrap/v1alpha3: TalosConfig, TalosConfigTemplate;
// api/controlplane/v1alpha3: TalosControlPlane), their CRDs (CRDDirectory)
// are generated from these types and labelled for CAPI's v1beta1
// contract, which the real v1alpha3 kinds keep, and a test checks every
// field they declare against the real CRDs where
// ../shared/testdata/talos-capi-crds exists. Run them next to CAPI core
// and an infrastructure provider (test/providers/infrastructure):
//
//	err := talosproviders.Setup(ctx, mgr, talosproviders.Options{})
//
// What they do and do not do is said in the packages of their controllers,
// controllers/talosconfig and controllers/taloscontrolplane.
package talos
