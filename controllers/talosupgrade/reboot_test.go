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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

func TestRebootAskedOfCAPIDrivenRollout(t *testing.T) {
	g := NewWithT(t)
	u := &upgradev1.TalosUpgrade{}
	u.Spec.TargetFrom = upgradev1.TargetFromCAPI
	u.Spec.Reboot.After = metav1.NewTime(t0.Add(-time.Hour))
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: t0}}
	g.Expect(s.RebootAskedOf(builder.Machine("ns", "m-0", "c")).Due).To(BeNil(), "a rollout CAPI drives acts only on what CAPI hands over")
}
