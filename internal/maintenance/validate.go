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
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// dayNames are the valid days of a window, in calendar order.
var dayNames = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// Validate returns what is wrong with spec: a spec that restricts nothing
// (no windows and no excluded dates), a time zone that is not an IANA name
// (or is "Local", the zone of the host Tollgate runs on), malformed, empty
// or duplicate windows, days and excluded dates. fldPath is the path of
// spec, for example field.NewPath("spec", "maintenance"). Open ignores a
// malformed window, so a spec it is given should have passed Validate.
func Validate(spec *upgradev1.MaintenanceSpec, fldPath *field.Path) field.ErrorList {
	if spec == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(spec.Windows) == 0 && len(spec.ExcludeDates) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, spec,
			"restricts nothing: name the windows in which a Machine may start, or the excludeDates on which none does; remove maintenance to let Machines start at any time"))
	}
	switch _, err := Location(spec); {
	case spec.TimeZone == localZone:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("timeZone"), spec.TimeZone,
			`is the zone of the host Tollgate runs on, so the windows would open at different times depending on where it runs: name an IANA time zone such as "Europe/Berlin", or leave it unset for UTC`))
	case err != nil:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("timeZone"), spec.TimeZone,
			`is not an IANA time zone: use a name such as "Europe/Berlin" or "America/New_York", or leave it unset for UTC`))
	}
	for i := range spec.Windows {
		w := &spec.Windows[i]
		path := fldPath.Child("windows").Index(i)
		start, startErrs := validateClock(w.Start, path.Child("start"))
		end, endErrs := validateClock(w.End, path.Child("end"))
		allErrs = append(allErrs, startErrs...)
		allErrs = append(allErrs, endErrs...)
		if len(startErrs) == 0 && len(endErrs) == 0 && start == end {
			allErrs = append(allErrs, field.Invalid(path.Child("end"), w.End,
				"must differ from start: the window would be empty; for a window open all day use start 00:00 and end 23:59, or omit windows"))
		}
		days := sets.New[upgradev1.Weekday]()
		for j, d := range w.Days {
			dpath := path.Child("days").Index(j)
			if _, ok := weekdays[d]; !ok {
				allErrs = append(allErrs, field.NotSupported(dpath, d, dayNames))
			}
			if days.Has(d) {
				allErrs = append(allErrs, field.Duplicate(dpath, d))
			}
			days.Insert(d)
		}
	}
	dates := sets.New[string]()
	for i, d := range spec.ExcludeDates {
		path := fldPath.Child("excludeDates").Index(i)
		if _, err := time.Parse(dateLayout, d); err != nil || len(d) != len(dateLayout) {
			allErrs = append(allErrs, field.Invalid(path, d, "must be a calendar date in the form YYYY-MM-DD, such as 2026-12-24"))
		}
		if dates.Has(d) {
			allErrs = append(allErrs, field.Duplicate(path, d))
		}
		dates.Insert(d)
	}
	return allErrs
}

// validateClock parses an HH:MM time of day, as clock does, into a field
// error when it is malformed.
func validateClock(s string, fldPath *field.Path) (time.Duration, field.ErrorList) {
	d, err := clock(s)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(fldPath, s, `must be a time of day in the 24-hour form HH:MM, from "00:00" to "23:59"`)}
	}
	return d, nil
}
