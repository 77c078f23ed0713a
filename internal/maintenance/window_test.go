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
		{name: "empty: restricts nothing", spec: &upgradev1.MaintenanceSpec{}, want: []string{"spec.maintenance"}},
		{name: "a time zone alone restricts nothing", spec: &upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin"}, want: []string{"spec.maintenance"}},
		{name: "empty lists restrict nothing", spec: &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{}, ExcludeDates: []string{}}, want: []string{"spec.maintenance"}},
		{name: "excluded dates alone restrict", spec: &upgradev1.MaintenanceSpec{ExcludeDates: []string{"2026-12-24"}}},
		{name: "the host's zone", spec: &upgradev1.MaintenanceSpec{TimeZone: "Local", Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "05:00"}}}, want: []string{"spec.maintenance.timeZone"}},
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

func TestOpenInATimeZone(t *testing.T) {
	ny := func(start, end string, dates ...string) *upgradev1.MaintenanceSpec {
		return &upgradev1.MaintenanceSpec{TimeZone: "America/New_York", Windows: []upgradev1.MaintenanceWindow{{Start: start, End: end}}, ExcludeDates: dates}
	}
	tests := []struct {
		name     string
		spec     *upgradev1.MaintenanceSpec
		now      string
		wantOpen bool
		wantNext string
	}{
		// New York: EST (UTC-5) in winter, EDT (UTC-4) in summer.
		{name: "winter: 22:00 New York is 03:00 UTC", spec: ny("22:00", "04:00"), now: "2026-12-02T03:00:00Z", wantOpen: true},
		{name: "summer: 22:00 New York is 02:00 UTC", spec: ny("22:00", "04:00"), now: "2026-07-02T02:00:00Z", wantOpen: true},
		{name: "summer: 03:00 UTC is 23:00 New York, open", spec: ny("22:00", "04:00"), now: "2026-07-02T03:00:00Z", wantOpen: true},
		{name: "next opening, in New York time", spec: ny("22:00", "04:00"), now: "2026-12-02T12:00:00Z", wantNext: "2026-12-03T03:00:00Z"},
		// 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
		{name: "spring forward: a window across the jump is open until its end", spec: ny("01:00", "03:00"), now: "2026-03-08T06:30:00Z", wantOpen: true},
		{name: "spring forward: the window ends at 03:00 EDT", spec: ny("01:00", "03:00"), now: "2026-03-08T07:00:00Z", wantNext: "2026-03-09T05:00:00Z"},
		{name: "spring forward: a window inside the gap is closed that day", spec: ny("02:15", "02:45"), now: "2026-03-08T07:00:00Z", wantNext: "2026-03-09T06:15:00Z"},
		{name: "spring forward: a window starting in the gap opens at the jump", spec: ny("02:30", "05:00"), now: "2026-03-08T06:00:00Z", wantNext: "2026-03-08T07:00:00Z"},
		// 2026-11-01: 02:00 EDT goes back to 01:00 EST (06:00 UTC).
		{name: "fall back: the repeated hour opens once, at its first occurrence", spec: ny("01:00", "01:30"), now: "2026-11-01T05:10:00Z", wantOpen: true},
		{name: "fall back: the second 01:10 is not in the window", spec: ny("01:00", "01:30"), now: "2026-11-01T06:10:00Z", wantNext: "2026-11-02T06:00:00Z"},
		{name: "fall back: a night window is an hour longer", spec: ny("22:00", "04:00"), now: "2026-11-01T08:30:00Z", wantOpen: true},
		{name: "fall back: and ends at 04:00 EST", spec: ny("22:00", "04:00"), now: "2026-11-01T09:00:00Z", wantNext: "2026-11-02T03:00:00Z"},
		// 2027-03-14 and 2027-11-07 are the next transitions.
		{name: "next year's spring forward", spec: ny("02:30", "05:00"), now: "2027-03-14T06:00:00Z", wantNext: "2027-03-14T07:00:00Z"},
		{name: "excluded dates are dates in the zone", spec: ny("00:00", "23:59", "2026-12-24"), now: "2026-12-25T03:00:00Z", wantNext: "2026-12-25T05:00:00Z"},
		{
			name:     "Berlin: a window inside its spring-forward gap",
			spec:     &upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin", Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "02:59"}}},
			now:      "2026-03-29T00:30:00Z",
			wantNext: "2026-03-30T00:00:00Z",
		},
		{name: "an unknown zone is never open", spec: &upgradev1.MaintenanceSpec{TimeZone: "Mars/Olympus_Mons", Windows: []upgradev1.MaintenanceWindow{{Start: "00:00", End: "23:59"}}}, now: "2026-12-02T03:00:00Z"},
		{name: "the host's zone is never open", spec: &upgradev1.MaintenanceSpec{TimeZone: "Local", Windows: []upgradev1.MaintenanceWindow{{Start: "00:00", End: "23:59"}}}, now: "2026-12-02T03:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			open, next := Open(tt.spec, at(tt.now))
			g.Expect(open).To(Equal(tt.wantOpen))
			if tt.wantNext != "" {
				g.Expect(next.UTC()).To(Equal(at(tt.wantNext)))
			} else {
				g.Expect(next.IsZero()).To(BeTrue())
			}
		})
	}
}

func TestValidateTimeZone(t *testing.T) {
	g := NewWithT(t)
	nightly := []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00"}}
	g.Expect(Validate(&upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin", Windows: nightly}, field.NewPath("m"))).To(BeEmpty())
	errs := Validate(&upgradev1.MaintenanceSpec{TimeZone: "Europe/Atlantis", Windows: nightly}, field.NewPath("m"))
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Field).To(Equal("m.timeZone"))
	g.Expect(errs[0].Detail).To(ContainSubstring("is not an IANA time zone"))
	g.Expect(Describe(&upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin", Windows: nightly})).To(Equal("22:00-04:00 Europe/Berlin"))

	// time.LoadLocation takes "Local" for the host's zone: the windows would
	// open at other instants on another host.
	errs = Validate(&upgradev1.MaintenanceSpec{TimeZone: "Local", Windows: nightly}, field.NewPath("m"))
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Field).To(Equal("m.timeZone"))
	g.Expect(errs[0].Detail).To(SatisfyAll(ContainSubstring("is the zone of the host Tollgate runs on"), ContainSubstring(`name an IANA time zone such as "Europe/Berlin"`)))
	g.Expect(Describe(&upgradev1.MaintenanceSpec{TimeZone: "Local", Windows: nightly})).To(Equal(`never: time zone "Local" is the zone of the host, not an IANA time zone`))

	errs = Validate(&upgradev1.MaintenanceSpec{}, field.NewPath("m"))
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Error()).To(Equal("m: Invalid value: {}: restricts nothing: name the windows in which a Machine may start, or the excludeDates on which none does; remove maintenance to let Machines start at any time"))
}
