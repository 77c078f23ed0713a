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

package soak

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestExcessBoots: a reboot answers a reboot asked for that the node had
// not answered yet (it booted at or before the second asked for, and now
// after it), or is an upgrade's; an upgrade's reboot answers every request
// before it, and a node is rebooted once per request.
func TestExcessBoots(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name     string
		boots    []time.Time
		after    []time.Time
		upgrades []time.Time
		excess   []time.Time
	}{
		{name: "no reboot"},
		{name: "a reboot asked for, once", boots: []time.Time{at(7)}, after: []time.Time{at(5)}},
		{name: "a reboot in the second asked for answers nothing", boots: []time.Time{at(5)}, after: []time.Time{at(5)}, excess: []time.Time{at(5)}},
		{name: "booted in the second asked for, rebooted after it", boots: []time.Time{at(5), at(9)}, after: []time.Time{at(5)}, upgrades: []time.Time{at(4)}},
		{name: "a reboot nobody asked for", boots: []time.Time{at(7)}, excess: []time.Time{at(7)}},
		{name: "a reboot before the time asked for", boots: []time.Time{at(4)}, after: []time.Time{at(5)}, excess: []time.Time{at(4)}},
		{name: "rebooted twice for one request", boots: []time.Time{at(7), at(20)}, after: []time.Time{at(5)}, excess: []time.Time{at(20)}},
		{name: "two requests, two reboots", boots: []time.Time{at(7), at(20)}, after: []time.Time{at(5), at(15)}},
		{name: "two requests before one reboot", boots: []time.Time{at(7), at(20)}, after: []time.Time{at(5), at(6)}, excess: []time.Time{at(20)}},
		{name: "an upgrade's reboot", boots: []time.Time{at(7)}, upgrades: []time.Time{at(6)}},
		{name: "the upgrade answers the request: no reboot again", boots: []time.Time{at(7), at(20)}, after: []time.Time{at(5)}, upgrades: []time.Time{at(6)}, excess: []time.Time{at(20)}},
		{name: "a reboot asked for after the upgrade", boots: []time.Time{at(7), at(20)}, after: []time.Time{at(10)}, upgrades: []time.Time{at(6)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []time.Time
			for _, b := range excessBoots(bootLog{first: t0, boots: tt.boots}, tt.after, tt.upgrades) {
				got = append(got, b.at)
			}
			g.Expect(got).To(Equal(tt.excess))
		})
	}
}
