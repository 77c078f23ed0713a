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

package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestOpen(t *testing.T) {
	nightly := &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00"}}}
	weekend := &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00", Days: []upgradev1.Weekday{"Sat"}}}}
	excluded := &upgradev1.MaintenanceSpec{
		Windows:      []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00"}},
		ExcludeDates: []string{"2026-12-24", "2026-12-25"},
	}
	onlyExcluded := &upgradev1.MaintenanceSpec{ExcludeDates: []string{"2026-12-24"}}
	tests := []struct {
		name     string
		spec     *upgradev1.MaintenanceSpec
		now      string
		wantOpen bool
		wantNext string
	}{
		{name: "no spec", spec: nil, now: "2026-11-29T12:00:00Z", wantOpen: true},
		{name: "before a nightly window", spec: nightly, now: "2026-11-29T12:00:00Z", wantNext: "2026-11-29T22:00:00Z"},
		{name: "at the start of a nightly window", spec: nightly, now: "2026-11-29T22:00:00Z", wantOpen: true},
		{name: "after midnight in a window that spans it", spec: nightly, now: "2026-11-30T03:59:00Z", wantOpen: true},
		{name: "at the end of a window", spec: nightly, now: "2026-11-30T04:00:00Z", wantNext: "2026-11-30T22:00:00Z"},
		// 2026-11-28 is a Saturday: the window opened Saturday night runs into Sunday.
		{name: "Sunday morning in a Saturday-night window", spec: weekend, now: "2026-11-29T02:00:00Z", wantOpen: true},
		{name: "Sunday night is not a Saturday window", spec: weekend, now: "2026-11-29T23:00:00Z", wantNext: "2026-12-05T22:00:00Z"},
		{name: "excluded date closes an open window", spec: excluded, now: "2026-12-24T23:00:00Z", wantNext: "2026-12-26T00:00:00Z"},
		{name: "the window spanning out of an excluded date reopens at midnight", spec: excluded, now: "2026-12-25T23:30:00Z", wantNext: "2026-12-26T00:00:00Z"},
		{name: "only excluded dates", spec: onlyExcluded, now: "2026-12-24T10:00:00Z", wantNext: "2026-12-25T00:00:00Z"},
		{name: "outside excluded dates", spec: onlyExcluded, now: "2026-12-23T10:00:00Z", wantOpen: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			open, next := Open(tt.spec, at(tt.now))
			g.Expect(open).To(Equal(tt.wantOpen))
			if tt.wantNext != "" {
				g.Expect(next).To(Equal(at(tt.wantNext)))
			} else {
				g.Expect(next.IsZero()).To(BeTrue())
			}
		})
	}
}

func TestValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Validate(&upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00", Days: []upgradev1.Weekday{"Mon"}}}})).To(Succeed())
	g.Expect(Validate(&upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "24:00", End: "04:00"}}})).To(MatchError(ContainSubstring("windows[0].start")))
	g.Expect(Validate(&upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "01:00", End: "4:00"}}})).To(MatchError(ContainSubstring("windows[0].end")))
	g.Expect(Validate(&upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "01:00", End: "04:00", Days: []upgradev1.Weekday{"Funday"}}}})).To(MatchError(ContainSubstring("windows[0].days[0]")))
	g.Expect(Validate(&upgradev1.MaintenanceSpec{ExcludeDates: []string{"2026-02-30"}})).To(MatchError(ContainSubstring("excludeDates[0]")))
}
