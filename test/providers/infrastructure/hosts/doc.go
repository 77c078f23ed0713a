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

// Package hosts is where the machines of the Talos-simulator infrastructure
// provider run: Hosts boots and removes the simulated Talos node of a
// TalosSimMachine, and Simulators implements it on test/talossim, one
// simulator per Cluster.
//
// The TalosSimMachine controller asks Hosts to boot a machine on every
// reconcile, so Boot is idempotent and reads the world: a node that runs
// is reported as it is now (its address and the version it runs after any
// upgrade), never booted again. ParseImage turns the image of a
// TalosSimMachine into the Talos version and Image Factory schematic the
// machine boots.
package hosts
