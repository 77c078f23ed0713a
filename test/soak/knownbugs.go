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

import "strings"

// A KnownBug is an engine bug the soak found, reproduced deterministically
// by a test of this package, and not fixed yet. TestSoakShort reports its
// violations without failing, so that `make test` stays useful while the
// fix is made; delete the entry with the fix.
type KnownBug struct {
	// Reproducer is the test that fails until the bug is fixed.
	Reproducer string
	// Summary says what is wrong.
	Summary string
	// Matches recognises the bug's violations.
	Matches func(Violation) bool
}

// KnownBugs are the bugs found and not fixed yet.
var KnownBugs = []KnownBug{
	{
		Reproducer: "TestReproduceFailedMachineLeftCordoned",
		Summary: "a Machine that fails while the workload (or management) apiserver is unreachable keeps its node cordoned " +
			"(and its skip-remediation annotation) for ever: fail() only logs the release error, and terminal Machines are never released again",
		Matches: func(v Violation) bool {
			return v.Invariant == 4 && (strings.Contains(v.Message, "left cordoned") || strings.Contains(v.Message, "left with cluster.x-k8s.io/skip-remediation"))
		},
	},
	{
		Reproducer: "TestReproduceDrainWhileHealthCheckFails",
		Summary: "health checks gate the selection of the next Machine, not its drain: a Machine selected while the check passed " +
			"and held at the pre-drain point (a hold, a retrying pre-drain hook, a restart) is cordoned and drained after the check " +
			"has failed and been recorded Failed",
		Matches: func(v Violation) bool { return v.Invariant == 2 && strings.Contains(v.Message, "health check") },
	},
	{
		Reproducer: "TestReproduceLegacyUpgradeErrorMisreported",
		Summary: "a legacy (Talos < 1.13) upgrade that fails after its acknowledgement is reported after rebootTimeout as " +
			"\"answers but did not reboot ... (was the controller killed ...?)\" instead of naming the failed upgrade",
		Matches: func(v Violation) bool {
			return v.Invariant == 4 && strings.Contains(v.Message, faultUpgradeError) && strings.Contains(v.Message, "did not reboot within rebootTimeout")
		},
	},
	{
		Reproducer: "TestReproduceSecretsInLogs",
		Summary: "at -v=8 and above client-go logs every request and response body, so the manager's logs hold the talosconfig " +
			"and kubeconfig Secrets (hex-dumped protobuf) with their private keys",
		Matches: func(v Violation) bool { return v.Invariant == 5 },
	},
}

// Known returns the known bug a violation belongs to, if any.
func Known(v Violation) (KnownBug, bool) {
	for _, b := range KnownBugs {
		if b.Matches(v) {
			return b, true
		}
	}
	return KnownBug{}, false
}
