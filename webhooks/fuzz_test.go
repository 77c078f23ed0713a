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

package webhooks_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// The fuzz tests feed arbitrary objects (and, for the version rules,
// arbitrary running versions) to the validation entry points. They must
// never panic, and defaulting must neither be needed twice nor turn a valid
// plan invalid. `go test ./webhooks/` runs the seed corpus; a fuzz run, as
// `make test` does it (hack/test.sh says why a count and a bounded
// minimization), is
//
//	go test -run='^$' -fuzz='^FuzzValidatePolicy$' -fuzztime=10000x -fuzzminimizetime=100x ./webhooks/
//
// Each execution decodes a whole corpus object and runs the webhook against
// a fake client, about a millisecond: the seeds are the corpus's objects, so
// that the fuzzer starts from admitted and refused specs alike.

// seeds returns the JSON of every corpus object of type T.
func seeds[T client.Object](f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, tc := range append(corpus.Unsafe(), corpus.Valid()...) {
		for _, o := range append([]client.Object{tc.Object}, tc.World...) {
			if _, ok := o.(T); !ok {
				continue
			}
			raw, err := json.Marshal(o)
			if err != nil {
				f.Fatalf("encoding a seed: %v", err)
			}
			out = append(out, raw)
		}
	}
	return out
}

func FuzzValidatePolicy(f *testing.F) {
	for _, raw := range seeds[*upgradev1.TalosUpgradePolicy](f) {
		f.Add(raw, "Talos (v1.12.4)", "v1.35.2")
	}
	f.Add([]byte(`{"spec":{"talosVersion":"v1.13.0-0","installer":{"source":"image","repository":"a/b@sha256:00"}}}`), "Talos (v1.10.0-alpha.0)", "1.31")
	f.Add([]byte(`{"spec":{"rollout":{"workers":{"maxUnavailable":"999%"},"order":[{"name":"x","selector":{"matchExpressions":[{"key":"","operator":"In"}]}}]}}}`), "", "")

	c := indexed(fake.NewClientBuilder().WithScheme(scheme)).Build()
	w := &webhooks.TalosUpgradePolicy{Client: c}
	f.Fuzz(func(t *testing.T, raw []byte, osImage, k8s string) {
		p := &upgradev1.TalosUpgradePolicy{}
		if err := json.Unmarshal(raw, p); err != nil {
			return
		}
		p.Namespace, p.Name = corpus.Namespace, "fuzz"
		before := plan.Validate(&p.Spec.UpgradePlan, field.NewPath("spec"))
		if len(before) == 0 {
			for _, h := range p.Spec.Hooks {
				if msgs := validation.IsDNS1123Label(hooks.JobName(strings.Repeat("c", 63), strings.Repeat("m", 253), h.Name, h.Point, 10)); len(msgs) > 0 {
					t.Fatalf("the admitted hook %q derives an invalid Job name: %v", h.Name, msgs)
				}
			}
		}

		if err := w.Default(context.Background(), p); err != nil {
			t.Fatalf("Default: %v", err)
		}
		once := p.DeepCopy()
		_ = w.Default(context.Background(), p)
		if !equality.Semantic.DeepEqual(once, p) {
			t.Fatalf("Default is not idempotent: %+v then %+v", once.Spec, p.Spec)
		}
		after := plan.Validate(&p.Spec.UpgradePlan, field.NewPath("spec"))
		if len(before) == 0 && len(after) > 0 {
			t.Fatalf("defaulting made a valid plan invalid: %v", after.ToAggregate())
		}

		_, _ = w.ValidateCreate(context.Background(), p)
		_, _ = w.ValidateUpdate(context.Background(), once, p)
		_ = plan.Warnings(&p.Spec.UpgradePlan)

		cluster := corpus.Cluster("c", "fuzz")
		cluster.Spec.Topology.Version = k8s
		machine := clusterv1.Machine{}
		machine.Name = "m"
		machine.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
		machine.Spec.Version = k8s
		machine.Status.NodeInfo = &corev1.NodeSystemInfo{OSImage: osImage, KubeletVersion: k8s}
		machines := []clusterv1.Machine{machine}
		_ = plan.ValidateForCluster(&p.Spec.UpgradePlan, cluster, machines, field.NewPath("spec"))
		versions := plan.VersionsOf(cluster, machines)
		_ = plan.ClusterWarnings(&versions)
	})
}

func FuzzValidateTalosUpgrade(f *testing.F) {
	for _, raw := range seeds[*upgradev1.TalosUpgrade](f) {
		f.Add(raw, raw)
	}
	c := indexed(fake.NewClientBuilder().WithScheme(scheme)).Build()
	w := &webhooks.TalosUpgrade{Client: c, ControllerUsername: corpus.ControllerUsername}
	f.Fuzz(func(t *testing.T, rawOld, rawNew []byte) {
		oldU, newU := &upgradev1.TalosUpgrade{}, &upgradev1.TalosUpgrade{}
		if json.Unmarshal(rawOld, oldU) != nil || json.Unmarshal(rawNew, newU) != nil {
			return
		}
		if err := w.Default(context.Background(), newU); err != nil {
			t.Fatalf("Default: %v", err)
		}
		_, _ = w.ValidateCreate(context.Background(), newU)
		_, _ = w.ValidateUpdate(context.Background(), oldU, newU)
		// An update that changes nothing is always allowed.
		if _, err := w.ValidateUpdate(context.Background(), newU, newU.DeepCopy()); err != nil {
			t.Fatalf("an update that changes nothing was refused: %v", err)
		}
	})
}

func FuzzValidateClusterHealthCheck(f *testing.F) {
	for _, raw := range seeds[*upgradev1.ClusterHealthCheck](f) {
		f.Add(raw, "ceph-health")
	}
	w := &webhooks.ClusterHealthCheck{}
	f.Fuzz(func(t *testing.T, raw []byte, name string) {
		c := &upgradev1.ClusterHealthCheck{}
		if err := json.Unmarshal(raw, c); err != nil {
			return
		}
		c.Name = name
		before := plan.ValidateClusterHealthCheck(c)
		if len(before) == 0 {
			for _, cluster := range []string{"c", "prod-eu-1", strings.Repeat("x", 63)} {
				if msgs := validation.IsDNS1123Label(healthchecks.JobName(name, cluster)); len(msgs) > 0 {
					t.Fatalf("the admitted check %q derives an invalid Job name in Cluster %q: %v", name, cluster, msgs)
				}
			}
		}
		if err := w.Default(context.Background(), c); err != nil {
			t.Fatalf("Default: %v", err)
		}
		after := plan.ValidateClusterHealthCheck(c)
		if len(before) == 0 && len(after) > 0 {
			t.Fatalf("defaulting made a valid check invalid: %v", after.ToAggregate())
		}
		_, _ = w.ValidateCreate(context.Background(), c)
	})
}
