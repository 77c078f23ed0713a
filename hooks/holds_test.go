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

package hooks_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

func TestHolds(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		point       upgradev1.HoldPoint
		want        []string
	}{
		{name: "no annotations", point: upgradev1.HoldPointPreDrain},
		{
			name: "owners sorted, other points and CAPI's hooks ignored",
			annotations: map[string]string{
				"pre-drain.upgrade.hook.tollgate.dev/zeta":             "",
				"pre-drain.upgrade.hook.tollgate.dev/backup-operator":  "snapshot running",
				"pre-reboot.upgrade.hook.tollgate.dev/ceph":            "",
				"pre-drain.delete.hook.machine.cluster.x-k8s.io/other": "",
			},
			point: upgradev1.HoldPointPreDrain,
			want:  []string{"backup-operator", "zeta"},
		},
		{
			name:        "pre-reboot",
			annotations: map[string]string{"pre-reboot.upgrade.hook.tollgate.dev/ceph": ""},
			point:       upgradev1.HoldPointPreReboot,
			want:        []string{"ceph"},
		},
		{
			name:        "post-upgrade",
			annotations: map[string]string{"post-upgrade.upgrade.hook.tollgate.dev/smoke-tests": ""},
			point:       upgradev1.HoldPointPostUpgrade,
			want:        []string{"smoke-tests"},
		},
		{
			name: "only keys of the form prefix/owner count",
			annotations: map[string]string{
				"pre-drain.upgrade.hook.tollgate.dev":             "",
				"pre-drain.upgrade.hook.tollgate.dev/":            "",
				"pre-drain.upgrade.hook.tollgate.dev.example/own": "",
			},
			point: upgradev1.HoldPointPreDrain,
		},
		{name: "unknown point", annotations: map[string]string{"pre-drain.upgrade.hook.tollgate.dev/a": ""}, point: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			g.Expect(hooks.Holds(m, tt.point)).To(Equal(tt.want))
		})
	}
}

func TestHoldAnnotation(t *testing.T) {
	g := NewWithT(t)
	g.Expect(hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "x")).To(Equal("pre-drain.upgrade.hook.tollgate.dev/x"))
	g.Expect(hooks.HoldAnnotation(upgradev1.HoldPointPreReboot, "x")).To(Equal("pre-reboot.upgrade.hook.tollgate.dev/x"))
	g.Expect(hooks.HoldAnnotation(upgradev1.HoldPointPostUpgrade, "x")).To(Equal("post-upgrade.upgrade.hook.tollgate.dev/x"))
}

// Tollgate reads the holds at a point: their owners, sorted.
func ExampleHolds() {
	machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Name: "worker-0",
		Annotations: map[string]string{
			hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "backup-operator"): "snapshot in progress",
			hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "ceph-operator"):   "rebalancing",
		},
	}}
	fmt.Println(hooks.Holds(machine, upgradev1.HoldPointPreDrain))
	fmt.Println(hooks.Holds(machine, upgradev1.HoldPointPreReboot))
	// Output:
	// [backup-operator ceph-operator]
	// []
}

// A backup operator holds a Machine before its drain until its snapshot is
// done, then releases its own hold and only its own.
func ExampleSetHold() {
	ctx := context.Background()
	machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "worker-0"}}
	c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(machine).Build()

	if err := hooks.SetHold(ctx, c, machine, upgradev1.HoldPointPreDrain, "backup-operator", "snapshot in progress"); err != nil {
		panic(err)
	}
	if err := hooks.SetHold(ctx, c, machine, upgradev1.HoldPointPreDrain, "ceph-operator", "rebalancing"); err != nil {
		panic(err)
	}
	fmt.Println(hooks.Holds(machine, upgradev1.HoldPointPreDrain))

	// The snapshot is done: the backup operator releases its own hold.
	if err := hooks.ReleaseHold(ctx, c, machine, upgradev1.HoldPointPreDrain, "backup-operator"); err != nil {
		panic(err)
	}
	stored := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(machine), stored); err != nil {
		panic(err)
	}
	fmt.Println(hooks.Holds(stored, upgradev1.HoldPointPreDrain))
	// Output:
	// [backup-operator ceph-operator]
	// [ceph-operator]
}

func TestSetHoldAndReleaseHold(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "worker-0",
		Annotations: map[string]string{hooks.HoldAnnotation(upgradev1.HoldPointPreReboot, "ceph"): ""},
	}}
	c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(machine).Build()
	stored := func() *clusterv1.Machine {
		m := &clusterv1.Machine{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(machine), m)).To(Succeed())
		return m
	}

	g.Expect(hooks.SetHold(ctx, c, machine, upgradev1.HoldPointPreReboot, "backup", "snapshot")).To(Succeed())
	g.Expect(hooks.SetHold(ctx, c, machine, upgradev1.HoldPointPreReboot, "backup", "snapshot")).To(Succeed(), "setting it again")
	g.Expect(stored().Annotations).To(HaveKeyWithValue("pre-reboot.upgrade.hook.tollgate.dev/backup", "snapshot"))
	g.Expect(hooks.Holds(stored(), upgradev1.HoldPointPreReboot)).To(Equal([]string{"backup", "ceph"}))

	// Releasing acts on a stale copy too, and leaves the other owner's hold.
	stale := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "worker-0",
		Annotations: map[string]string{hooks.HoldAnnotation(upgradev1.HoldPointPreReboot, "backup"): "snapshot"}}}
	g.Expect(hooks.ReleaseHold(ctx, c, stale, upgradev1.HoldPointPreReboot, "backup")).To(Succeed())
	g.Expect(hooks.ReleaseHold(ctx, c, machine, upgradev1.HoldPointPreDrain, "backup")).To(Succeed(), "releasing a hold that is not there")
	g.Expect(hooks.Holds(stored(), upgradev1.HoldPointPreReboot)).To(Equal([]string{"ceph"}))

	g.Expect(hooks.SetHold(ctx, c, machine, "postReboot", "backup", "")).To(MatchError(ContainSubstring("unknown hold point")))
	g.Expect(hooks.SetHold(ctx, c, machine, upgradev1.HoldPointPreDrain, "", "")).To(MatchError(ContainSubstring("valid annotation key")))
	g.Expect(hooks.ReleaseHold(ctx, c, machine, upgradev1.HoldPointPreDrain, "not/an-owner")).To(MatchError(ContainSubstring("valid annotation key")))
}

// newScheme returns a scheme with the CAPI types.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clusterv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// A hook Job's name is stable for a Machine, hook, point and attempt, so a
// restarted controller finds the Job it started.
func ExampleJobName() {
	first := hooks.JobName("prod", "prod-md-0-abcde", "ceph-noout", upgradev1.HookPointPreReboot, 1)
	again := hooks.JobName("prod", "prod-md-0-abcde", "ceph-noout", upgradev1.HookPointPreReboot, 1)
	retry := hooks.JobName("prod", "prod-md-0-abcde", "ceph-noout", upgradev1.HookPointPreReboot, 2)
	fmt.Println(first == again, first == retry, len(first) <= 63)
	// Output: true false true
}

func TestBackoff(t *testing.T) {
	g := NewWithT(t)
	got := []string{}
	for n := int32(1); n <= 7; n++ {
		got = append(got, hooks.Backoff(n).String())
	}
	g.Expect(got).To(Equal([]string{"10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"}))
}
