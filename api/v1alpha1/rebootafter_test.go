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

package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestRebootAfterSchema sends spec.reboot.after as users write it, in YAML
// that no Go type has decoded: the apiserver refuses what is not an RFC 3339
// time (a duration such as "168h" above all) naming spec.reboot.after and
// saying what to write, on a TalosUpgradePolicy and on a TalosUpgrade alike,
// and admits the times a Go client writes.
func TestRebootAfterSchema(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	const rfc3339 = "must be a time in RFC 3339, such as 2026-12-24T22:00:00Z (a date, T, a time of day to the second and a zone, Z for UTC)"
	const howTo = ": the nodes that last booted at or before it are rebooted once; for every node now, write the current time (date -u +%Y-%m-%dT%H:%M:%SZ), for the nodes up longer than a duration, the time that long ago"
	tests := []struct {
		after   any
		wantErr string
	}{
		{after: "168h", wantErr: `spec.reboot.after: Invalid value: "168h": ` + rfc3339 + ", not a duration" + howTo},
		{after: "1h30m", wantErr: rfc3339 + ", not a duration"},
		{after: "7d", wantErr: rfc3339 + ", not a duration"},
		{after: "now", wantErr: `spec.reboot.after: Invalid value: "now": ` + rfc3339 + howTo},
		{after: "", wantErr: rfc3339},
		{after: "2026-12-24", wantErr: rfc3339},
		{after: "2026-12-24T22:00:00", wantErr: rfc3339},
		{after: "2026-12-24 22:00:00Z", wantErr: rfc3339},
		{after: "2026-12-24T22:00Z", wantErr: rfc3339},
		{after: "2026-13-24T22:00:00Z", wantErr: rfc3339},
		{after: "2026-02-30T22:00:00Z", wantErr: rfc3339},
		{after: "2026-12-24T22:00:00.000+0100", wantErr: rfc3339},
		{after: int64(168), wantErr: "spec.reboot.after: Invalid value: \"integer\": spec.reboot.after in body must be of type string"},
		{after: "2026-12-24T22:00:00Z"},
		{after: "2026-12-24T22:00:00+01:00"},
		{after: "2026-12-24T22:00:00.123456789-05:30"},
		{after: "2028-02-29T00:00:00Z"},
	}
	for _, kind := range []string{"TalosUpgradePolicy", "TalosUpgrade"} {
		for _, tt := range tests {
			t.Run(kind+" "+toString(tt.after), func(t *testing.T) {
				g := NewWithT(t)
				spec := map[string]any{"talosVersion": "v1.13.0", "installer": map[string]any{"source": "ghcr"}, "reboot": map[string]any{"after": tt.after}}
				if kind == "TalosUpgrade" {
					spec["clusterName"], spec["policyName"] = "c", "p"
				}
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "upgrade.tollgate.dev/v1alpha1", "kind": kind,
					"metadata": map[string]any{"namespace": namespace, "generateName": "reboot-after-"},
					"spec":     spec,
				}}
				err := mgmt.Client.Create(context.Background(), u)
				if tt.wantErr == "" {
					g.Expect(err).NotTo(HaveOccurred())
					return
				}
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
				g.Expect(err.Error()).NotTo(ContainSubstring("parsing time"))
			})
		}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return `"` + s + `"`
	}
	return "a number"
}
