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

// Package maintenance decides whether a Machine may start its upgrade now,
// given a policy's maintenance windows and excluded dates in its time zone
// (UTC by default), and when it next may. Windows gate only the start of a Machine: one already started
// always finishes. Validate checks a policy's windows and dates, for the
// plan rules (internal/plan) that the admission webhooks apply.
package maintenance

// The time zone database is embedded, so that the distroless image, which
// has none, knows every zone.
import _ "time/tzdata"
