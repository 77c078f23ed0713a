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
	"testing"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestUnmadeIntent: an upgrade intent whose write returned an error is known
// to this process as made without its call, once; a call started for the
// Machine forgets it.
func TestUnmadeIntent(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{}
	s := &scope{upgrade: &upgradev1.TalosUpgrade{}}
	s.upgrade.UID = "u-1"
	st := &upgradev1.MachineUpgradeStatus{Machine: "m-0"}
	g.Expect(r.calls.takeUnmade(s.upgrade, "m-0")).To(BeFalse(), "a controller that never started knows of no unmade call")
	r.notMade(s, st)
	g.Expect(r.calls.takeUnmade(s.upgrade, "m-1")).To(BeFalse())
	g.Expect(r.calls.takeUnmade(s.upgrade, "m-0")).To(BeTrue())
	g.Expect(r.calls.takeUnmade(s.upgrade, "m-0")).To(BeFalse(), "taken once")
}
