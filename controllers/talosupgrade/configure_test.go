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

package talosupgrade

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

func TestConfigRecord(t *testing.T) {
	g := NewWithT(t)
	target := &disruption.ConfigTarget{Source: "TalosConfigTemplate alpha-md-0", Hash: "h2"}
	g.Expect(disruption.ConfigRecord(nil, nil)).To(BeNil(), "no patches, nothing to bring")
	g.Expect(disruption.ConfigRecord(pendingConfig(), nil)).To(BeNil())
	g.Expect(disruption.ConfigRecord(nil, target)).To(Equal(&upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h2", State: upgradev1.MachineConfigUnknown}))
	g.Expect(disruption.ConfigRecord(pendingConfig(), target).State).To(Equal(upgradev1.MachineConfigUnknown), "new patches are read again")
	same := &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h2", State: upgradev1.MachineConfigPending}
	g.Expect(disruption.ConfigRecord(same, target)).To(BeIdenticalTo(same))
	broken := &disruption.ConfigTarget{Source: "TalosConfigTemplate alpha-md-0", Err: errors.New("malformed")}
	g.Expect(disruption.ConfigRecord(same, broken)).To(BeIdenticalTo(same), "unreadable patches change nothing")

	g.Expect(disruption.NewerConfig(&upgradev1.MachineUpgradeStatus{}, target)).To(BeTrue())
	g.Expect(disruption.NewerConfig(&upgradev1.MachineUpgradeStatus{Config: same}, target)).To(BeFalse())
	g.Expect(disruption.NewerConfig(&upgradev1.MachineUpgradeStatus{Config: pendingConfig()}, target)).To(BeTrue())
	g.Expect(disruption.NewerConfig(&upgradev1.MachineUpgradeStatus{}, broken)).To(BeFalse())
	g.Expect(disruption.NewerConfig(&upgradev1.MachineUpgradeStatus{}, nil)).To(BeFalse())
}

func TestMachineConfigsCondition(t *testing.T) {
	g := NewWithT(t)
	ok := map[string]*disruption.ConfigTarget{"md-0": {Source: "TalosConfigTemplate md-0", Hash: "h1"}}
	c, set := disruption.MachineConfigsCondition(ok, nil)
	g.Expect(set).To(BeTrue())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))

	_, set = disruption.MachineConfigsCondition(map[string]*disruption.ConfigTarget{"md-0": {Source: "TalosConfigTemplate md-0"}}, nil)
	g.Expect(set).To(BeFalse(), "no template has patches")

	bad := map[string]*disruption.ConfigTarget{"md-0": {Source: "TalosConfigTemplate md-0", Err: fmt.Errorf("%w: spec.template.spec.configPatches[0].op", machineconfig.ErrMalformedPatches)}}
	c, _ = disruption.MachineConfigsCondition(bad, nil)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(upgradev1.MachineConfigPatchesInvalidReason))
	g.Expect(c.Message).To(ContainSubstring("TalosConfigTemplate md-0"))

	refused := []upgradev1.MachineUpgradeStatus{{Machine: "m-0", Config: &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate md-0", Hash: "h1", State: upgradev1.MachineConfigRefused, Message: "changes cluster.ca"}}}
	c, _ = disruption.MachineConfigsCondition(ok, refused)
	g.Expect(c.Reason).To(Equal(upgradev1.MachineConfigNotInPlaceReason))
	g.Expect(c.Message).To(ContainSubstring("TalosConfigTemplate md-0 (Machine m-0): changes cluster.ca"))
	g.Expect(c.Message).To(ContainSubstring("replace the Machines"))
}
