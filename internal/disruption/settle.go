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

package disruption

import (
	"fmt"
	"strings"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// SettleOnTarget decides a Pending record of a Machine that runs the target
// and has no hook left to run again: it is Completed unless its node must
// be rebooted (a reboot) or configured (Configure, which reboots it too
// when the reboot was asked for). It returns false when the node must be
// read first (the record then says what for).
func SettleOnTarget(now time.Time, st *upgradev1.MachineUpgradeStatus, target string) bool {
	cfg := st.Config
	switch {
	case st.RebootAfter != nil && st.BootTime == nil:
		st.Message = fmt.Sprintf("waiting to read when node %q last booted: a reboot is asked for nodes booted at or before %s", st.Node, st.RebootAfter.UTC().Format(time.RFC3339))
		return false
	case st.Kubernetes != nil && st.Kubernetes.State == upgradev1.MachineConfigUnknown:
		st.Message = fmt.Sprintf("waiting to read the machine configuration of node %q: the %s of Kubernetes %s", st.Node, st.Kubernetes.Part, st.Kubernetes.Version)
		return false
	case st.Kubernetes != nil && st.Kubernetes.State == upgradev1.MachineConfigPending:
		// With the template's patches, if they changed too.
		st.Action, st.Message = upgradev1.MachineActionKubernetes, ""
		return true
	case cfg != nil && cfg.State == upgradev1.MachineConfigUnknown:
		st.Message = fmt.Sprintf("waiting to read the machine configuration of node %q: the patches of %s changed", st.Node, cfg.Source)
		return false
	case cfg != nil && cfg.State == upgradev1.MachineConfigPending:
		st.Action, st.Message = upgradev1.MachineActionConfigure, ""
		return true
	case !RebootAnswered(st):
		st.Action, st.Message = upgradev1.MachineActionReboot, ""
		return true
	}
	done := []string{"already runs " + target}
	if st.RebootAfter != nil {
		done = append(done, fmt.Sprintf("booted at %s, after the reboot asked for at %s", st.BootTime.UTC().Format(time.RFC3339), st.RebootAfter.UTC().Format(time.RFC3339)))
	}
	if cfg != nil && cfg.State == upgradev1.MachineConfigConverged {
		done = append(done, "runs the patches of "+cfg.Source)
	}
	if what := kubernetesDone(st); what != "" {
		done = append(done, "runs "+what)
	}
	st.Phase, st.Message = upgradev1.MachinePhaseCompleted, strings.Join(done, " and ")
	st.CompletionTime = ptrTime(now)
	return true
}
