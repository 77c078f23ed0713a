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

package talosupgrade

import (
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// t0 is the time of the reconciles of the tests of this package that need
// no apiserver.
var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// pendingConfig is the config part of a record whose node does not run its
// template's patches yet.
func pendingConfig() *upgradev1.MachineConfigStatus {
	return &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h1", State: upgradev1.MachineConfigPending}
}
