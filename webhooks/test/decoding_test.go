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

package test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUndecodableObjectIsRefusedNamingTheField applies, with the webhooks
// installed, a policy and a TalosUpgrade whose spec.reboot.after is a
// duration, which no Go type decodes: the defaulting webhook, which the
// apiserver calls before its schema validation, lets them through, and the
// schema refuses them naming spec.reboot.after and saying what to write,
// rather than the decoder's `parsing time "168h" as "2006-01-02T15:04:05Z07:00"`.
func TestUndecodableObjectIsRefusedNamingTheField(t *testing.T) {
	envtestOnly(t)
	ns := namespace(t, "undecodable")
	for _, kind := range []string{"TalosUpgradePolicy", "TalosUpgrade"} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			spec := map[string]any{"talosVersion": "v1.13.0", "installer": map[string]any{"source": "ghcr"}, "reboot": map[string]any{"after": "168h"}}
			if kind == "TalosUpgrade" {
				spec["clusterName"], spec["policyName"] = "c", "p"
			}
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "upgrade.tollgate.dev/v1alpha1", "kind": kind,
				"metadata": map[string]any{"namespace": ns, "name": "weekly"},
				"spec":     spec,
			}}
			err := mgmt.Client.Create(context.Background(), u)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(SatisfyAll(
				ContainSubstring(`spec.reboot.after: Invalid value: "168h": must be a time in RFC 3339, such as 2026-12-24T22:00:00Z`),
				ContainSubstring("not a duration"),
				ContainSubstring("write the current time (date -u +%Y-%m-%dT%H:%M:%SZ)"),
				Not(ContainSubstring("parsing time")),
			))
		})
	}
}
