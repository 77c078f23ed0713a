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

// Package inplace decides which changes of Cluster API's desired state
// Tollgate makes on a running Talos node instead of CAPI replacing the
// Machine: the capability answer of CAPI's CanUpdateMachineSet and
// CanUpdateMachine hooks (feature gates InPlaceUpdates and RuntimeSDK).
//
// The answer is a pure function of the request: for every spec field
// Tollgate claims (Claims) whose desired value differs from the current one
// and is a value Tollgate can apply, a JSON patch operation that sets it.
// CAPI applies the patches to the current objects; if the result is the
// desired objects, it updates the Machines in place through UpdateMachine,
// otherwise it falls back to replacing them. A change Tollgate does not claim
// is therefore left to CAPI, never refused.
package inplace
