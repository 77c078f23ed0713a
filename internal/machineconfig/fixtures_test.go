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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// configKey is a machine configuration fixture: its type and the Talos
// version contract it is generated for.
type configKey struct {
	kind     machine.Type
	contract string
}

var (
	// bundle is the secrets bundle every fixture shares, as the Machines
	// of one Cluster do.
	bundle = sync.OnceValues(func() (*secrets.Bundle, error) {
		return secrets.NewBundle(secrets.NewFixedClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), config.TalosVersionCurrent)
	})
	// configs caches the generated fixtures.
	configs   = map[configKey][]byte{}
	configsMu sync.Mutex
)

// generated returns the configuration CABPT would render, without
// patches, for a Machine of kind in Cluster "alpha" (endpoint
// https://10.0.0.1:6443, Kubernetes 1.35.0), for the contract of Talos
// version contract (the current one when empty). Talos 1.12 and later
// generate two documents; v1.11 generates one.
func generated(tb testing.TB, kind machine.Type, contract string) []byte {
	tb.Helper()
	configsMu.Lock()
	defer configsMu.Unlock()
	key := configKey{kind: kind, contract: contract}
	if c, ok := configs[key]; ok {
		return c
	}
	b, err := bundle()
	if err != nil {
		tb.Fatalf("generating the secrets bundle: %v", err)
	}
	vc := config.TalosVersionCurrent
	if contract != "" {
		if vc, err = config.ParseContractFromVersion(contract); err != nil {
			tb.Fatalf("parsing contract %s: %v", contract, err)
		}
	}
	in, err := generate.NewInput("alpha", "https://10.0.0.1:6443", "1.35.0", generate.WithSecretsBundle(b), generate.WithVersionContract(vc))
	if err != nil {
		tb.Fatalf("preparing the configuration: %v", err)
	}
	cfg, err := in.Config(kind)
	if err != nil {
		tb.Fatalf("generating the configuration: %v", err)
	}
	out, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDocs))
	if err != nil {
		tb.Fatalf("encoding the configuration: %v", err)
	}
	configs[key] = out
	return out
}

// worker and controlPlane are the current contract's fixtures.
func worker(tb testing.TB) []byte { tb.Helper(); return generated(tb, machine.TypeWorker, "") }
func controlPlane(tb testing.TB) []byte {
	tb.Helper()
	return generated(tb, machine.TypeControlPlane, "")
}

// withStrategic returns data with the strategic patches applied, for
// fixtures that differ from the generated ones.
func withStrategic(tb testing.TB, data []byte, patches ...string) []byte {
	tb.Helper()
	out, err := Desired(data, Patches{Source: "fixture", StrategicPatches: patches})
	if err != nil {
		tb.Fatalf("patching the fixture: %v", err)
	}
	return out
}

// replaceAll returns data with old replaced by new, failing when old is
// absent, for fixtures a patch cannot make.
func replaceAll(tb testing.TB, data []byte, old, new string) []byte {
	tb.Helper()
	if !strings.Contains(string(data), old) {
		tb.Fatalf("the fixture has no %q", old)
	}
	return []byte(strings.ReplaceAll(string(data), old, new))
}

// specOption changes the TalosConfigSpec of a fixture object.
type specOption func(*bootstrapv1.TalosConfigSpec)

// withConfigPatch adds a JSON patch operation.
func withConfigPatch(op, path, value string) specOption {
	return func(s *bootstrapv1.TalosConfigSpec) {
		p := bootstrapv1.ConfigPatches{Op: op, Path: path}
		if value != "" {
			p.Value = apiextensionsv1.JSON{Raw: []byte(value)}
		}
		s.ConfigPatches = append(s.ConfigPatches, p)
	}
}

// withStrategicPatch adds a strategic patch.
func withStrategicPatch(patch string) specOption {
	return func(s *bootstrapv1.TalosConfigSpec) { s.StrategicPatches = append(s.StrategicPatches, patch) }
}

// spec returns a worker TalosConfigSpec with opts.
func spec(opts ...specOption) bootstrapv1.TalosConfigSpec {
	s := bootstrapv1.TalosConfigSpec{GenerateType: bootstrapv1.GenerateTypeWorker, TalosVersion: "v1.13"}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// toUnstructured returns obj as the apiserver would serve it.
func toUnstructured(tb testing.TB, obj runtime.Object, gvk string) *unstructured.Unstructured {
	tb.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		tb.Fatalf("converting %T: %v", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	apiVersion, kind, _ := strings.Cut(gvk, ", Kind=")
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

// talosConfigTemplate, talosConfig and talosControlPlane return fixture
// objects named fleet/alpha-md-0 (fleet/alpha-cp) with opts in their spec.
func talosConfigTemplate(tb testing.TB, opts ...specOption) *unstructured.Unstructured {
	tb.Helper()
	return toUnstructured(tb, &bootstrapv1.TalosConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0"},
		Spec:       bootstrapv1.TalosConfigTemplateSpec{Template: bootstrapv1.TalosConfigTemplateResource{Spec: spec(opts...)}},
	}, "bootstrap.cluster.x-k8s.io/v1alpha3, Kind=TalosConfigTemplate")
}

func talosConfig(tb testing.TB, opts ...specOption) *unstructured.Unstructured {
	tb.Helper()
	return toUnstructured(tb, &bootstrapv1.TalosConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-x7k2p"},
		Spec:       spec(opts...),
	}, "bootstrap.cluster.x-k8s.io/v1alpha3, Kind=TalosConfig")
}

func talosControlPlane(tb testing.TB, opts ...specOption) *unstructured.Unstructured {
	tb.Helper()
	s := spec(opts...)
	s.GenerateType = bootstrapv1.GenerateTypeControlPlane
	return toUnstructured(tb, &controlplanev1.TalosControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-cp"},
		Spec: controlplanev1.TalosControlPlaneSpec{
			ControlPlaneConfig: controlplanev1.ControlPlaneConfig{
				ControlPlaneConfig: s,
				// init is not read: a sentinel patch there must not appear.
				InitConfig: spec(withStrategicPatch("machine:\n  sysctls:\n    init.only: \"1\"\n")),
			},
		},
	}, "controlplane.cluster.x-k8s.io/v1alpha3, Kind=TalosControlPlane")
}
