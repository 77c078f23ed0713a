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

package machineconfig

import (
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// canary is a secret no error may show, nor the 7 characters YAML errors
// show of a long value; password is a short one, under a key that says it
// is secret.
const (
	canary   = "TOLLGATE-CANARY-5f0c2e9b7a4d"
	password = "hunter2x"
)

// TestErrorsCarryNoSecret feeds secrets to every error path and checks that
// no error message shows them: errors name fields, never values.
func TestErrorsCarryNoSecret(t *testing.T) {
	running := withStrategic(t, worker(t), "cluster:\n  secret: "+canary+"\n")
	runningWithUnknownKey := replaceAll(t, worker(t), "\nmachine:\n", "\nmachine:\n    tokn: "+canary+"\n")
	registryPatch := "machine:\n  registries:\n    config:\n      registry.example:\n        auth:\n          username: u\n          passwrd: " + password + "\n"

	for _, tc := range []struct {
		name string
		err  func() error
		// field is a field the error must name.
		field string
	}{
		{name: "Read: a strategic patch with an unknown key", field: "machine.tokn", err: func() error {
			_, err := Read(talosConfigTemplate(t, withStrategicPatch("machine:\n  tokn: "+canary+"\n")))
			return err
		}},
		{name: "Read: a short secret under an unknown key", field: "passwrd", err: func() error {
			_, err := Read(talosConfigTemplate(t, withStrategicPatch(registryPatch)))
			return err
		}},
		{name: "Read: a secret where a map belongs", field: "strategicPatches[0]", err: func() error {
			_, err := Read(talosConfigTemplate(t, withStrategicPatch("machine:\n  sysctls: "+canary+"\n")))
			return err
		}},
		{name: "Read: a secret as an op", field: "configPatches[0]: op", err: func() error {
			_, err := Read(talosConfigTemplate(t, withConfigPatch(canary, "/machine/token", `"x"`)))
			return err
		}},
		{name: "Read: a secret as a path", field: "configPatches[0]: path", err: func() error {
			_, err := Read(talosConfigTemplate(t, withConfigPatch("add", canary, `"x"`)))
			return err
		}},
		{name: "Desired: a running configuration with a secret under an unknown key", field: "machine.tokn", err: func() error {
			_, err := Desired(runningWithUnknownKey, Patches{})
			return err
		}},
		{name: "Desired: a JSON patch testing a secret", field: "configPatches", err: func() error {
			_, err := Desired(generated(t, machine.TypeWorker, "v1.11"), Patches{ConfigPatches: []Operation{
				{Op: "test", Path: "/cluster/secret", Value: json.RawMessage(fmt.Sprintf("%q", canary))},
			}})
			return err
		}},
		{name: "Desired: a JSON patch setting a secret at a path that is not there", field: "configPatches", err: func() error {
			_, err := Desired(generated(t, machine.TypeWorker, "v1.11"), Patches{ConfigPatches: []Operation{
				{Op: "replace", Path: "/cluster/nothing/secret", Value: json.RawMessage(fmt.Sprintf("%q", canary))},
			}})
			return err
		}},
		{name: "Desired: a strategic patch that does not load", field: "strategicPatches[0]", err: func() error {
			_, err := Desired(running, Patches{StrategicPatches: []string{"cluster:\n  secrt: " + canary + "\n"}})
			return err
		}},
		{name: "Desired: patches that are not idempotent", field: "configPatches", err: func() error {
			_, err := Desired(withStrategic(t, generated(t, machine.TypeWorker, "v1.11"), "machine:\n  certSANs: ["+canary+", b.example]\n"),
				Patches{ConfigPatches: []Operation{{Op: "remove", Path: "/machine/certSANs/0"}}})
			return err
		}},
		{name: "CheckInPlace: a changed cluster secret", field: "cluster.secret", err: func() error {
			return CheckInPlace(running, withStrategic(t, running, "cluster:\n  secret: "+canary+"-rotated\n"))
		}},
		{name: "CheckInPlace: a desired configuration with a secret under an unknown key", field: "machine.tokn", err: func() error {
			return CheckInPlace(running, runningWithUnknownKey)
		}},
		{name: "CheckInPlace: a running configuration with a secret under an unknown key", field: "machine.tokn", err: func() error {
			return CheckInPlace(runningWithUnknownKey, running)
		}},
		{name: "CheckInPlace: a desired configuration Talos does not validate", field: "does not validate", err: func() error {
			return CheckInPlace(running, withStrategic(t, running,
				"machine:\n  network:\n    interfaces:\n      - interface: eth0\n        addresses: ["+canary+"]\n"))
		}},
		{name: "CheckInPlace: a desired configuration whose secret has the wrong type", field: "the desired configuration does not load", err: func() error {
			return CheckInPlace(running, replaceAll(t, running, "secret: "+canary, "secret:\n        - "+canary))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.err()
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tc.field))
			for _, secret := range []string{canary, canary[:7], password} {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
		})
	}
}
