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
	"errors"
	"fmt"
	"sort"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// dateLayout is the layout of excludeDates.
const dateLayout = time.DateOnly

// horizonDays bounds the search for the next open instant.
const horizonDays = 400

// weekdays maps the days of a window to time's.
var weekdays = map[upgradev1.Weekday]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// localZone is the name time.LoadLocation gives the zone of the host:
// never a zone of windows, which must open at the same instants wherever
// Tollgate runs.
const localZone = "Local"

// errLocalZone is the error of the time zone "Local".
var errLocalZone = errors.New(`time zone "Local" is the zone of the host, not an IANA time zone`)

// Location returns the time zone of spec's windows and dates: its
// timeZone, UTC when unset. An unknown zone, or "Local", is an error
// (Validate refuses both).
func Location(spec *upgradev1.MaintenanceSpec) (*time.Location, error) {
	if spec == nil || spec.TimeZone == "" {
		return time.UTC, nil
	}
	if spec.TimeZone == localZone {
		return nil, errLocalZone
	}
	loc, err := time.LoadLocation(spec.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", spec.TimeZone, err)
	}
	return loc, nil
}

// Open reports whether a Machine may start at now. When it may not, next is
// the next instant it may (zero when there is none within about a year, for
// example because every day is excluded). A spec whose time zone is unknown
// is never open.
func Open(spec *upgradev1.MaintenanceSpec, now time.Time) (open bool, next time.Time) {
	if spec == nil || (len(spec.Windows) == 0 && len(spec.ExcludeDates) == 0) {
		return true, time.Time{}
	}
	loc, err := Location(spec)
	if err != nil {
		return false, time.Time{}
	}
	now = now.In(loc)
	if openAt(spec, loc, now) {
		return true, time.Time{}
	}
	// The state changes only at a window's start or at midnight (the end of
	// an excluded date), so those are the only candidates.
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	for i := 0; i < horizonDays; i++ {
		day := today.AddDate(0, 0, i)
		candidates := []time.Time{wallTime(day, 0, loc)}
		for _, w := range spec.Windows {
			if start, err := clock(w.Start); err == nil {
				candidates = append(candidates, wallTime(day, start, loc))
			}
		}
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].Before(candidates[j]) })
		for _, t := range candidates {
			if t.After(now) && openAt(spec, loc, t) {
				return false, t
			}
		}
	}
	return false, time.Time{}
}

// Describe says in words when the windows are, for messages; for a spec
// whose time zone cannot be used (admitted while the webhook was bypassed),
// that it never opens and why.
func Describe(spec *upgradev1.MaintenanceSpec) string {
	if _, err := Location(spec); err != nil {
		return fmt.Sprintf("never: %v", err)
	}
	if spec == nil || len(spec.Windows) == 0 {
		return "any time outside the excluded dates"
	}
	zone := "UTC"
	if spec.TimeZone != "" {
		zone = spec.TimeZone
	}
	s := ""
	for i, w := range spec.Windows {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s-%s %s", w.Start, w.End, zone)
		if len(w.Days) > 0 {
			s += fmt.Sprintf(" on %v", w.Days)
		}
	}
	return s
}

func openAt(spec *upgradev1.MaintenanceSpec, loc *time.Location, t time.Time) bool {
	t = t.In(loc)
	for _, d := range spec.ExcludeDates {
		if t.Format(dateLayout) == d {
			return false
		}
	}
	if len(spec.Windows) == 0 {
		return true
	}
	for _, w := range spec.Windows {
		if inWindow(w, loc, t) {
			return true
		}
	}
	return false
}

// inWindow reports whether t falls in w: a window opens on one of its days
// at start and closes at end, on the next day when end is not after start,
// both wall-clock times of loc (see wallTime for the days the clocks
// change).
func inWindow(w upgradev1.MaintenanceWindow, loc *time.Location, t time.Time) bool {
	start, err1 := clock(w.Start)
	end, err2 := clock(w.End)
	if err1 != nil || err2 != nil {
		return false
	}
	t = t.In(loc)
	// The window containing t opened today or yesterday, local time.
	for _, back := range []int{0, -1} {
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc).AddDate(0, 0, back)
		closeDay := day
		if end <= start {
			closeDay = day.AddDate(0, 0, 1)
		}
		opens, closes := wallTime(day, start, loc), wallTime(closeDay, end, loc)
		if !t.Before(opens) && t.Before(closes) && onDay(w, day.Weekday()) {
			return true
		}
	}
	return false
}

// wallTime returns the instant at which the clocks of loc show the time of
// day d on the date of day. On the days the clocks change:
//
//   - a time that does not exist (the clocks jump forward over it) is the
//     instant they jump: a window from 02:30 on the day New York goes from
//     02:00 to 03:00 opens at 03:00, and one from 02:00 to 02:45 is empty;
//   - a time that exists twice (the clocks go back over it) is its first
//     occurrence: a window is open once, not twice.
func wallTime(day time.Time, d time.Duration, loc *time.Location) time.Time {
	y, m, dd := day.Date()
	h, mins := int(d/time.Hour), int(d%time.Hour/time.Minute)
	// The offsets in force a day before and a day after: at most one change
	// of the clocks lies between them.
	noon := time.Date(y, m, dd, 12, 0, 0, 0, time.UTC)
	_, before := noon.Add(-36 * time.Hour).In(loc).Zone()
	_, after := noon.Add(36 * time.Hour).In(loc).Zone()
	wall := time.Date(y, m, dd, h, mins, 0, 0, time.UTC)
	var found []time.Time
	for _, offset := range []int{before, after} {
		t := wall.Add(-time.Duration(offset) * time.Second)
		if lt := t.In(loc); lt.Hour() == h && lt.Minute() == mins && lt.Day() == dd {
			found = append(found, t)
		}
	}
	switch {
	case len(found) == 2 && found[1].Before(found[0]):
		return found[1]
	case len(found) > 0:
		return found[0]
	}
	// In the gap: the clocks jump between the two candidates; find the jump.
	lo, hi := wall.Add(-time.Duration(after)*time.Second), wall.Add(-time.Duration(before)*time.Second)
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	_, loOffset := lo.In(loc).Zone()
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if _, off := mid.In(loc).Zone(); off == loOffset {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi.Truncate(time.Second)
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
