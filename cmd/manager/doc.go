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

// Package manager is Tollgate's composition root: it builds the controller
// manager with the scheme, the caches, CAPI's ClusterCache, every controller
// and the webhooks. It is the one package that imports both controllers/ and
// webhooks/; nothing but programs and test harnesses import it. main.go (the
// tollgate binary) parses the flags into Options and calls New; the sandbox
// behind `make demo` (test/framework/sandbox), the soak and the controller suites build
// their manager here too, so they run exactly the production wiring.
package manager
