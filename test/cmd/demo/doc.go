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

// Command demo is `make demo`: it rolls a Talos upgrade across a CAPI
// Cluster of simulated Talos nodes, made by Cluster API core in a local
// sandbox, with the production manager, and shows it live (with
// --capi-driven, CAPI drives it through Tollgate's in-place update
// extension). The demo itself is package test/demo; its world is
// test/framework/sandbox. The demo, bench and soak programs sit together under
// test/cmd; the production manager is main.go with cmd/manager.
package main
