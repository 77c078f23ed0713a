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
	"fmt"
	"sort"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// dateLayout is the layout of excludeDates.
const dateLayout = time.DateOnly

// horizon bounds the search for the next open instant.
const horizon = 400 * 24 * time.Hour

// weekdays maps the days of a window to time's.
var weekdays = map[upgradev1.Weekday]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// Open reports whether a Machine may start at now. When it may not, next is
// the next instant it may (zero when there is none within about a year, for
// example because every day is excluded).
func Open(spec *upgradev1.MaintenanceSpec, now time.Time) (open bool, next time.Time) {
	now = now.UTC()
	if spec == nil || (len(spec.Windows) == 0 && len(spec.ExcludeDates) == 0) {
		return true, time.Time{}
	}
	if openAt(spec, now) {
		return true, time.Time{}
	}
	// The state changes only at a window's start or at midnight (the end of
	// an excluded date), so those are the only candidates.
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for day := today; day.Sub(today) < horizon; day = day.AddDate(0, 0, 1) {
		candidates := []time.Time{day}
		for _, w := range spec.Windows {
			if start, err := clock(w.Start); err == nil {
				candidates = append(candidates, day.Add(start))
			}
		}
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].Before(candidates[j]) })
		for _, t := range candidates {
			if t.After(now) && openAt(spec, t) {
				return false, t
			}
		}
	}
	return false, time.Time{}
}

// Describe says in words when the windows are, for messages.
func Describe(spec *upgradev1.MaintenanceSpec) string {
	if spec == nil || len(spec.Windows) == 0 {
		return "any time outside the excluded dates"
	}
	s := ""
	for i, w := range spec.Windows {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s-%s UTC", w.Start, w.End)
		if len(w.Days) > 0 {
			s += fmt.Sprintf(" on %v", w.Days)
		}
	}
	return s
}

func openAt(spec *upgradev1.MaintenanceSpec, t time.Time) bool {
	for _, d := range spec.ExcludeDates {
		if t.Format(dateLayout) == d {
			return false
		}
	}
	if len(spec.Windows) == 0 {
		return true
	}
	for _, w := range spec.Windows {
		if inWindow(w, t) {
			return true
		}
	}
	return false
}

// inWindow reports whether t falls in w: a window opens on one of its days
// at start and closes at end, on the next day when end is not after start.
func inWindow(w upgradev1.MaintenanceWindow, t time.Time) bool {
	start, err1 := clock(w.Start)
	end, err2 := clock(w.End)
	if err1 != nil || err2 != nil {
		return false
	}
	length := end - start
	if length <= 0 {
		length += 24 * time.Hour
	}
	// The window containing t opened today or yesterday.
	for _, back := range []int{0, -1} {
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, back)
		opens := day.Add(start)
		if !t.Before(opens) && t.Before(opens.Add(length)) && onDay(w, day.Weekday()) {
			return true
		}
	}
	return false
}

func onDay(w upgradev1.MaintenanceWindow, d time.Weekday) bool {
	if len(w.Days) == 0 {
		return true
	}
	for _, day := range w.Days {
		if weekdays[day] == d {
			return true
		}
	}
	return false
}

// clock parses "HH:MM" into the time since midnight.
func clock(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, fmt.Errorf("%q is not a time in the form HH:MM (24-hour, UTC)", s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}
