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
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

var mgmt *envtest.Management

func TestMain(m *testing.M) {
	if envtest.NoteWithoutAssets("the schema tests of the API (they need a kube-apiserver), running the tests that need none") {
		os.Exit(m.Run())
	}
	var err error
	mgmt, err = envtest.StartManagement()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := mgmt.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "Stopping the management control plane: %v\n", err)
	}
	os.Exit(code)
}

const namespace = "default"

func validPolicy(name string) *upgradev1.TalosUpgradePolicy {
	return &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"},
		}},
	}
}

func jobTemplate() batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "check", Image: "bitnami/kubectl:1.35", Command: []string{"kubectl", "get", "nodes"}}},
	}}}}
}

func validCheck(name string) *upgradev1.ClusterHealthCheck {
	return &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       upgradev1.ClusterHealthCheckSpec{Template: jobTemplate()},
	}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// TestPolicyDefaults checks that the schema defaults a minimal policy into a
// complete, safe plan.
func TestPolicyDefaults(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx := context.Background()
	p := validPolicy("defaults")
	p.Spec.Hooks = []upgradev1.ActionHook{{Name: "noout", Point: upgradev1.HookPointPreReboot, Template: jobTemplate()}}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())

	got := &upgradev1.TalosUpgradePolicy{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
	g.Expect(got.Spec.RebootTimeout).To(Equal(duration(15 * time.Minute)))
	g.Expect(got.Spec.Hooks[0].Timeout).To(Equal(duration(10 * time.Minute)))
	g.Expect(*got.Spec.Hooks[0].Retries).To(BeEquivalentTo(0))
	g.Expect(got.Spec.Hooks[0].Template.Spec.Template.Spec.Containers).To(HaveLen(1), "the Job template is preserved")
}

// TestHealthCheckDefaults checks the defaults of a ClusterHealthCheck.
func TestHealthCheckDefaults(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := validCheck("defaults")
	g.Expect(mgmt.Client.Create(ctx, c)).To(Succeed())
	got := &upgradev1.ClusterHealthCheck{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
	g.Expect(got.Spec.Interval).To(Equal(duration(30 * time.Second)))
	g.Expect(got.Spec.Timeout).To(BeNil(), "the webhook defaults the timeout, by kind: 5m for a Job, 10s for an http or prometheus check")
	g.Expect(*got.Spec.SuccessThreshold).To(BeEquivalentTo(1))
	g.Expect(got.Spec.Template.Spec.Template.Spec.Containers[0].Image).To(Equal("bitnami/kubectl:1.35"))
}

// TestPolicySchemaValidation checks that the schema and its CEL rules reject
// bad policies with a message naming the field.
func TestPolicySchemaValidation(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	intOrString := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	tests := []struct {
		name    string
		mutate  func(*upgradev1.TalosUpgradePolicy)
		wantErr []string
	}{
		{name: "valid factory policy", mutate: func(*upgradev1.TalosUpgradePolicy) {}},
		{
			name: "valid percentage, groups, windows and hooks",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Workers.MaxUnavailable = intOrString(intstr.FromString("25%"))
				p.Spec.Rollout.Order = []upgradev1.RolloutGroup{{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}}
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{
					Windows:      []upgradev1.MaintenanceWindow{{Start: "22:00", End: "04:00", Days: []upgradev1.Weekday{"Sat", "Sun"}}},
					ExcludeDates: []string{"2026-12-24"},
				}
				p.Spec.Installer.SchematicID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
			},
		},
		{
			name: "worker maxUnavailable 0",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Workers.MaxUnavailable = intOrString(intstr.FromInt32(0))
			},
			wantErr: []string{"spec.rollout.workers.maxUnavailable", "at least 1"},
		},
		{
			name: "worker maxUnavailable 0%",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Workers.MaxUnavailable = intOrString(intstr.FromString("0%"))
			},
			wantErr: []string{"spec.rollout.workers.maxUnavailable"},
		},
		{
			name: "worker maxUnavailable 150%",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Workers.MaxUnavailable = intOrString(intstr.FromString("150%"))
			},
			wantErr: []string{"spec.rollout.workers.maxUnavailable"},
		},
		{
			name:    "control-plane maxUnavailable 0",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.ControlPlane.MaxUnavailable = ptr(int32(0)) },
			wantErr: []string{"spec.rollout.controlPlane.maxUnavailable"},
		},
		{
			name:    "malformed version",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = "latest" },
			wantErr: []string{"spec.talosVersion"},
		},
		{
			name:    "factory without platform",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Installer.Platform = "" },
			wantErr: []string{"spec.installer", "platform is required when source is factory"},
		},
		{
			name: "image without repository",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage}
			},
			wantErr: []string{"spec.installer", "repository is required when source is image"},
		},
		{
			name:    "unknown installer source",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Installer.Source = "docker" },
			wantErr: []string{"spec.installer.source", "Unsupported value"},
		},
		{
			name:    "schematic ID not 64 hex characters",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Installer.SchematicID = "abc" },
			wantErr: []string{"spec.installer.schematicID"},
		},
		{
			name: "window with a bad time",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "25:00", End: "04:00"}}}
			},
			wantErr: []string{"spec.maintenance.windows[0].start"},
		},
		{
			name: "window with a bad day",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "01:00", End: "04:00", Days: []upgradev1.Weekday{"Someday"}}}}
			},
			wantErr: []string{"spec.maintenance.windows[0].days[0]"},
		},
		{
			name: "bad exclude date",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{ExcludeDates: []string{"24/12/2026"}}
			},
			wantErr: []string{"spec.maintenance.excludeDates[0]"},
		},
		{
			name: "unknown hook point",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Hooks = []upgradev1.ActionHook{{Name: "x", Point: "postReboot", Template: jobTemplate()}}
			},
			wantErr: []string{"spec.hooks[0].point", "Unsupported value"},
		},
		{
			name:    "reboot timeout too short",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.RebootTimeout = duration(time.Second) },
			wantErr: []string{"spec.rebootTimeout", "at least 30s"},
		},
		{
			name:    "unknown failure action",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.FailurePolicy.Action = "Retry" },
			wantErr: []string{"spec.failurePolicy.action"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := validPolicy(fmt.Sprintf("schema-%d", i))
			tt.mutate(p)
			expectCreate(g, p, tt.wantErr)
		})
	}
}

// TestHealthCheckSchemaValidation checks the CEL rules of ClusterHealthCheck.
func TestHealthCheckSchemaValidation(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	tests := []struct {
		name    string
		mutate  func(*upgradev1.ClusterHealthCheck)
		wantErr []string
	}{
		{name: "interval 5s is the minimum", mutate: func(c *upgradev1.ClusterHealthCheck) { c.Spec.Interval = duration(5 * time.Second) }},
		{
			name:    "interval 1s",
			mutate:  func(c *upgradev1.ClusterHealthCheck) { c.Spec.Interval = duration(time.Second) },
			wantErr: []string{"spec.interval", "at least 5s"},
		},
		{
			name:    "zero timeout",
			mutate:  func(c *upgradev1.ClusterHealthCheck) { c.Spec.Timeout = duration(0) },
			wantErr: []string{"spec.timeout", "must be positive"},
		},
		{
			name:    "successThreshold 0",
			mutate:  func(c *upgradev1.ClusterHealthCheck) { c.Spec.SuccessThreshold = ptr(int32(0)) },
			wantErr: []string{"spec.successThreshold"},
		},
		{
			name:    "no kind",
			mutate:  func(c *upgradev1.ClusterHealthCheck) { c.Spec.Template = batchv1.JobTemplateSpec{} },
			wantErr: []string{"spec", "set exactly one of template (a Job), http or prometheus"},
		},
		{
			name:    "a Job and an http check",
			mutate:  func(c *upgradev1.ClusterHealthCheck) { c.Spec.HTTP = httpCheck() },
			wantErr: []string{"spec", "set exactly one of template (a Job), http or prometheus"},
		},
		{
			name: "an http check alone",
			mutate: func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Template, c.Spec.HTTP = batchv1.JobTemplateSpec{}, httpCheck()
			},
		},
		{
			name: "an http check with both a service and a url",
			mutate: func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Template, c.Spec.HTTP = batchv1.JobTemplateSpec{}, httpCheck()
				c.Spec.HTTP.Service = &upgradev1.HealthCheckService{Namespace: "rook-ceph", Name: "rook-ceph-mgr", Port: intstr.FromInt32(9283)}
			},
			wantErr: []string{"spec.http", "set exactly one of service and url"},
		},
		{
			name: "a prometheus check with a comparison on noFiringAlerts",
			mutate: func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Template = batchv1.JobTemplateSpec{}
				c.Spec.Prometheus = &upgradev1.PrometheusHealthCheck{
					HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "https://prometheus.example.com"},
					NoFiringAlerts:      &upgradev1.PrometheusAlertSelector{},
					Comparison:          &upgradev1.PrometheusComparison{Operator: "<", Value: "1"},
				}
			},
			wantErr: []string{"spec.prometheus", "comparison applies to query only"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := validCheck(fmt.Sprintf("schema-%d", i))
			tt.mutate(c)
			expectCreate(g, c, tt.wantErr)
		})
	}
}

// TestTalosUpgradeClusterNameImmutable checks that a rollout cannot be moved
// to another Cluster.
func TestTalosUpgradeClusterNameImmutable(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx := context.Background()
	u := &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "alpha"},
		Spec:       upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "p", UpgradePlan: validPolicy("p").Spec.UpgradePlan},
	}
	g.Expect(mgmt.Client.Create(ctx, u)).To(Succeed())
	u.Spec.ClusterName = "beta"
	err := mgmt.Client.Update(ctx, u)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("clusterName is immutable"))
}

// expectCreate creates obj and expects it admitted, or refused with an error
// that names every one of wantErr.
func expectCreate(g Gomega, obj client.Object, wantErr []string) {
	err := mgmt.Client.Create(context.Background(), obj)
	if len(wantErr) == 0 {
		g.Expect(err).NotTo(HaveOccurred())
		return
	}
	g.Expect(err).To(HaveOccurred())
	for _, want := range wantErr {
		g.Expect(err.Error()).To(ContainSubstring(want))
	}
}

func ptr[T any](v T) *T { return &v }

// httpCheck is an http check of a URL.
func httpCheck() *upgradev1.HTTPHealthCheck {
	return &upgradev1.HTTPHealthCheck{HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "https://ceph.example.com/health"}}
}
