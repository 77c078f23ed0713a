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

package talosupgrade_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// scrape reads the manager's /metrics endpoint.
func scrape(g Gomega, addr string) map[string]*dto.MetricFamily {
	resp, err := http.Get("http://" + addr + "/metrics") //nolint:noctx // A test's scrape of a local endpoint.
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close() //nolint:errcheck // Read to the end below.
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// sample returns the value of the series of family name with labels, and
// whether there is one: a counter's or gauge's value, a histogram's count.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := families[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !labelsMatch(m, labels) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// freeAddr returns a loopback address with a free port.
func freeAddr(g Gomega) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close() //nolint:errcheck // Only its port is wanted.
	return l.Addr().String()
}

// TestMetrics scrapes /metrics after a small rollout (two Machines on the
// legacy upgrade API, a health check and a pre-reboot hook) and checks that
// every documented series is there with the rollout's figures.
func TestMetrics(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	r.createCheck(g, "ceph")
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "noout", Point: upgradev1.HookPointPreReboot, Template: jobTemplate("ceph", "osd", "set", "noout")}}
	}))).To(Succeed())
	addr := freeAddr(g)
	r.mgrConfig.MetricsBindAddress = addr
	r.startManager()

	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())

	ns, cluster, policy := r.ns, "alpha", "to-1-13"
	g.Eventually(func(g Gomega) {
		m := scrape(g, addr)
		expect := func(name string, labels map[string]string, want float64) {
			v, ok := sample(m, name, labels)
			g.Expect(ok).To(BeTrue(), "no series %s%v", name, labels)
			g.Expect(v).To(Equal(want), "%s%v", name, labels)
		}
		expect("tollgate_rollouts", map[string]string{"namespace": ns, "policy": policy, "phase": "Completed"}, 1)
		expect("tollgate_rollouts", map[string]string{"namespace": ns, "policy": policy, "phase": "InProgress"}, 0)
		expect("tollgate_machines", map[string]string{"namespace": ns, "policy": policy, "cluster": cluster, "phase": "Completed"}, 2)
		expect("tollgate_upgrade_calls_total", map[string]string{"namespace": ns, "cluster": cluster, "api": "legacy", "result": "succeeded"}, 2)
		expect("tollgate_hook_runs_total", map[string]string{"namespace": ns, "cluster": cluster, "hook": "noout", "point": "preReboot", "result": "succeeded"}, 2)
		expect("tollgate_workload_connections", nil, 0)
		for _, phase := range []upgradev1.MachinePhase{upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseVerifying} {
			expect("tollgate_machine_phase_duration_seconds", map[string]string{"namespace": ns, "policy": policy, "phase": string(phase)}, 2)
		}
		runs, ok := sample(m, "tollgate_health_check_runs_total", map[string]string{"namespace": ns, "cluster": cluster, "check": "ceph", "result": "succeeded"})
		g.Expect(ok).To(BeTrue(), "no health-check runs counted")
		g.Expect(runs).To(BeNumerically(">=", 1), fmt.Sprintf("health-check runs: %v", runs))
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
}
