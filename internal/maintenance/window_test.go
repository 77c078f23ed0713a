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
	"k8s.io/apimachinery/pkg/util/validation/field"

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
	tests := []struct {
		name string
		spec *upgradev1.MaintenanceSpec
		want []string // the fields in error
	}{
		{name: "no spec"},
		{name: "valid", spec: &upgradev1.MaintenanceSpec{
			Windows:      []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00", Days: []upgradev1.Weekday{"Mon"}}},
			ExcludeDates: []string{"2026-12-24"},
		}},
		{name: "start past midnight", spec: &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "24:00", End: "04:00"}}}, want: []string{"spec.maintenance.windows[0].start"}},
		{name: "end without leading zero", spec: &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "01:00", End: "4:00"}}}, want: []string{"spec.maintenance.windows[0].end"}},
		{name: "empty window", spec: &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "02:00"}}}, want: []string{"spec.maintenance.windows[0].end"}},
		{name: "unknown day", spec: &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "01:00", End: "04:00", Days: []upgradev1.Weekday{"Funday"}}}}, want: []string{"spec.maintenance.windows[0].days[0]"}},
		{name: "duplicate day", spec: &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "01:00", End: "04:00", Days: []upgradev1.Weekday{"Sat", "Sat"}}}}, want: []string{"spec.maintenance.windows[0].days[1]"}},
		{name: "not a calendar date", spec: &upgradev1.MaintenanceSpec{ExcludeDates: []string{"2026-02-30"}}, want: []string{"spec.maintenance.excludeDates[0]"}},
		{name: "duplicate date", spec: &upgradev1.MaintenanceSpec{ExcludeDates: []string{"2026-12-24", "2026-12-24"}}, want: []string{"spec.maintenance.excludeDates[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fields := []string{}
			for _, err := range Validate(tt.spec, field.NewPath("spec", "maintenance")) {
				fields = append(fields, err.Field)
			}
			g.Expect(fields).To(ConsistOf(tt.want))
		})
	}
}
