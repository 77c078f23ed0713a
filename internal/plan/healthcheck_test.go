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

package plan_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

func TestValidateClusterHealthCheck(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *upgradev1.ClusterHealthCheck)
		want   []string // fields in error
	}{
		{name: "valid", modify: func(*upgradev1.ClusterHealthCheck) {}},
		{name: "name with a dot", modify: func(c *upgradev1.ClusterHealthCheck) { c.Name = "ceph.health" }, want: []string{"metadata.name"}},
		{name: "interval too short", modify: func(c *upgradev1.ClusterHealthCheck) {
			c.Spec.Interval = &metav1.Duration{Duration: time.Second}
		}, want: []string{"spec.interval"}},
		{name: "zero timeout", modify: func(c *upgradev1.ClusterHealthCheck) { c.Spec.Timeout = &metav1.Duration{} }, want: []string{"spec.timeout"}},
		{name: "successThreshold too large", modify: func(c *upgradev1.ClusterHealthCheck) {
			c.Spec.SuccessThreshold = ptr.To[int32](plan.MaxSuccessThreshold + 1)
		}, want: []string{"spec.successThreshold"}},
		{name: "restartPolicy Always", modify: func(c *upgradev1.ClusterHealthCheck) {
			c.Spec.Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, want: []string{"spec.template.spec.template.spec.restartPolicy"}},
		{name: "invalid label", modify: func(c *upgradev1.ClusterHealthCheck) { c.Spec.Labels = map[string]string{"a b": "c"} }, want: []string{"spec.labels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &upgradev1.ClusterHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "ceph-health"}}
			c.Spec.Template.Spec.Template.Spec.Containers = []corev1.Container{{Name: "check", Image: "registry.example.com/ceph-check:1"}}
			tt.modify(c)
			fields := []string{}
			for _, err := range plan.ValidateClusterHealthCheck(c) {
				fields = append(fields, err.Field)
			}
			g.Expect(fields).To(ConsistOf(tt.want))
		})
	}
}
