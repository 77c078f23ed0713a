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

// Package corpus holds the admission test corpora of package webhooks: plans
// that must be refused, each with the field and the message of the refusal,
// and realistic plans that must all be admitted. The same cases run through
// the validators directly (package webhooks) and through a real apiserver
// (package webhooks/test), which proves the wiring, not only the Go code.
package corpus
