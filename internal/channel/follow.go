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

package channel

import (
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// DefaultCheckInterval is how often a followed repository is listed when
// checkInterval is unset.
const DefaultCheckInterval = time.Hour

// FollowChoice is which of the releases a channel's follow allows from a
// version are old enough to enter it.
type FollowChoice struct {
	// Chosen is the newest allowed release old enough; "" when none is.
	Chosen string
	// TooYoung are the allowed releases younger than minReleaseAge, oldest
	// first.
	TooYoung []string
	// Matures is when the first of TooYoung comes of age; zero without.
	Matures time.Time
}

// ChooseRelease chooses, among the releases recorded in st, the one that
// enters the channel next when it follows from the version from: the newest
// that the rules allow (talos.FollowCandidates) and that is minReleaseAge
// old at now. A release's age counts from its image's creation time when
// recorded, else from when it was first seen.
func ChooseRelease(f *upgradev1.FollowSpec, st *upgradev1.FollowStatus, from string, now time.Time) FollowChoice {
	var c FollowChoice
	minAge := time.Duration(0)
	if f.MinReleaseAge != nil {
		minAge = f.MinReleaseAge.Duration
	}
	seen := make(map[string]upgradev1.SeenRelease, len(st.Releases))
	versions := make([]string, 0, len(st.Releases))
	for _, rel := range st.Releases {
		seen[rel.Version] = rel
		versions = append(versions, rel.Version)
	}
	for _, v := range talos.FollowCandidates(f.Allow, from, talos.StableReleases(versions)) {
		born := seen[v].FirstSeen.Time
		if created := seen[v].Created; created != nil && created.Time.Before(born) {
			born = created.Time
		}
		if now.Sub(born) >= minAge {
			c.Chosen = v
			continue
		}
		c.TooYoung = append(c.TooYoung, v)
		if at := born.Add(minAge); c.Matures.IsZero() || at.Before(c.Matures) {
			c.Matures = at
		}
	}
	return c
}

// CheckInterval is how often a followed repository is listed.
func CheckInterval(f *upgradev1.FollowSpec) time.Duration {
	if f.CheckInterval != nil && f.CheckInterval.Duration > 0 {
		return f.CheckInterval.Duration
	}
	return DefaultCheckInterval
}
