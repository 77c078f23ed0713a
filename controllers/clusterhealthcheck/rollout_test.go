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

package clusterhealthcheck_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/promserver"
)

// cephServer answers like Ceph's manager, HEALTH_OK or not, and records
// when it was asked.
type cephServer struct {
	*httptest.Server
	healthy atomic.Bool
	mu      sync.Mutex
	asked   []time.Time
}

func newCephServer(t *testing.T) *cephServer {
	t.Helper()
	s := &cephServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.asked = append(s.asked, time.Now())
		s.mu.Unlock()
		if !s.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprint(w, "HEALTH_WARN 3 pgs degraded")
			return
		}
		_, _ = fmt.Fprint(w, "HEALTH_OK")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *cephServer) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.asked...)
}

// httpCheck returns an http check every 5s, the minimum.
func httpCheck(ns, name string, endpoint upgradev1.HealthCheckEndpoint) *upgradev1.ClusterHealthCheck {
	return &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			HTTP:     &upgradev1.HTTPHealthCheck{HealthCheckEndpoint: endpoint, Body: &upgradev1.HTTPBodyMatch{Contains: "HEALTH_OK"}},
			Interval: &metav1.Duration{Duration: 5 * time.Second},
		},
	}
}

// TestHTTPCheckHoldsThenReleasesRollout gates a rollout on an http check of
// a Service of the workload cluster, reached through its apiserver: while
// the Service answers 503, no Machine starts and the rollout says why; once
// it answers HEALTH_OK, the rollout completes.
func TestHTTPCheckHoldsThenReleasesRollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := t.Context()
	w := newWorld(t)
	ceph := newCephServer(t)
	podAddr, err := network.Expose(ctx, w.workload.Client, "rook-ceph", "rook-ceph-mgr", "http-metrics", 9283, ceph.Listener.Addr().String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, httpCheck(w.ns, "ceph", upgradev1.HealthCheckEndpoint{Service: &upgradev1.HealthCheckService{
		Namespace: "rook-ceph", Name: "rook-ceph-mgr", Port: intstr.FromString("http-metrics"), Path: "/health",
	}}))).To(Succeed())
	w.createPolicy("ceph")
	w.startManager()

	reason := `waiting for healthchecks to pass: "ceph": HTTP 503 Service Unavailable: HEALTH_WARN 3 pgs degraded`
	g.Eventually(func(g Gomega) {
		u := w.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks))
		g.Expect(u.Status.BlockedBy).To(Equal(reason))
		g.Expect(conditions.GetReason(u, upgradev1.HealthChecksPassingCondition)).To(Equal(upgradev1.HealthChecksFailingReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	// It holds on the check's interval: asked again, still nothing starts.
	// The next run comes as soon as a loaded machine gets to it; nothing
	// starts meanwhile, nor for a while after.
	asked := len(ceph.times())
	g.Eventually(func(g Gomega) {
		g.Expect(anyStarted(w.upgrade(g))).To(BeFalse())
		g.Expect(len(ceph.times())).To(BeNumerically(">", asked), "the failing check runs again on its interval")
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(anyStarted(w.upgrade(g))).To(BeFalse())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	check := w.check(g, "ceph")
	g.Expect(conditions.GetReason(check, upgradev1.HealthCheckReadyCondition)).To(Equal(upgradev1.ProbeValidReason))
	g.Expect(check.Status.Results).To(ConsistOf(SatisfyAll(
		HaveField("Cluster", "alpha"), HaveField("Result", upgradev1.HealthCheckFailed),
		HaveField("Message", "HTTP 503 Service Unavailable: HEALTH_WARN 3 pgs degraded"),
	)))

	ceph.healthy.Store(true)
	g.Eventually(func(g Gomega) {
		g.Expect(w.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(w.check(g, "ceph").Status.Results).To(ConsistOf(SatisfyAll(HaveField("Cluster", "alpha"), HaveField("Result", upgradev1.HealthCheckPassed))))
	g.Expect(network.Dialled(podAddr)).To(BeNumerically(">", 0), "the checks went through the workload apiserver's Service proxy")
}

// TestPrometheusAlertCheckHoldsWhileAlertFires gates a rollout on "no
// critical alert fires" against Prometheus' query engine: the rollout holds
// while the alert's series exists, naming it, and goes on once Prometheus
// marks it stale.
func TestPrometheusAlertCheckHoldsWhileAlertFires(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := t.Context()
	w := newWorld(t)
	prom, err := promserver.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = prom.Close() })
	firing := map[string]string{"__name__": "ALERTS", "alertname": "CephHealthError", "alertstate": "firing", "severity": "critical"}
	g.Expect(prom.Set(firing, 1)).To(Succeed())
	g.Expect(prom.Set(map[string]string{"__name__": "ALERTS", "alertname": "Watchdog", "alertstate": "firing", "severity": "none"}, 1)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "no-critical-alerts"},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Prometheus: &upgradev1.PrometheusHealthCheck{
				HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: prom.URL},
				NoFiringAlerts:      &upgradev1.PrometheusAlertSelector{Labels: map[string]string{"severity": "critical"}},
			},
			Interval: &metav1.Duration{Duration: 5 * time.Second},
		},
	})).To(Succeed())
	w.createPolicy("no-critical-alerts")
	w.startManager()

	g.Eventually(func(g Gomega) {
		u := w.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks))
		g.Expect(u.Status.BlockedBy).To(Equal(`waiting for healthchecks to pass: "no-critical-alerts": 1 firing: CephHealthError{severity="critical"}`))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		// The alert's series is written again, as the rule manager does on
		// every evaluation while the alert fires.
		g.Expect(prom.Set(firing, 1)).To(Succeed())
		g.Expect(anyStarted(w.upgrade(g))).To(BeFalse())
	}, 6*time.Second, 500*time.Millisecond).Should(Succeed())

	g.Expect(prom.Stale(firing)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(w.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(prom.Queries()).To(HaveEach(`ALERTS{alertstate="firing",severity="critical"}`))
}

// TestPrometheusMisspeltMetricHoldsRollout gates a rollout on
// max(ceph_health_status) == 0 against Prometheus' query engine, with the
// metric misspelt: the query returns nothing, which must not pass, so the
// rollout holds and says why; once the query names the metric Ceph exports,
// the rollout completes.
func TestPrometheusMisspeltMetricHoldsRollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := t.Context()
	w := newWorld(t)
	prom, err := promserver.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = prom.Close() })
	g.Expect(prom.Set(map[string]string{"__name__": "ceph_health_status", "job": "ceph"}, 0)).To(Succeed())
	check := &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "ceph-health-status"},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Prometheus: &upgradev1.PrometheusHealthCheck{
				HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: prom.URL},
				Query:               `max(ceph_health_stauts)`,
				Comparison:          &upgradev1.PrometheusComparison{Operator: "==", Value: "0"},
			},
			Interval: &metav1.Duration{Duration: 5 * time.Second},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, check)).To(Succeed())
	w.createPolicy("ceph-health-status")
	w.startManager()

	empty := "the query returned no sample, and an empty result fails the check (a misspelt metric or an exporter that is down returns none too); set emptyResult: Pass if empty means healthy"
	g.Eventually(func(g Gomega) {
		u := w.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks))
		g.Expect(u.Status.BlockedBy).To(Equal(`waiting for healthchecks to pass: "ceph-health-status": ` + empty))
		g.Expect(conditions.GetReason(u, upgradev1.HealthChecksPassingCondition)).To(Equal(upgradev1.HealthChecksFailingReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	// It runs again on its interval, fails again, and nothing starts: wait
	// for the next run as long as a loaded machine needs.
	queries := len(prom.Queries())
	g.Eventually(func(g Gomega) {
		g.Expect(prom.Set(map[string]string{"__name__": "ceph_health_status", "job": "ceph"}, 0)).To(Succeed())
		g.Expect(len(prom.Queries())).To(BeNumerically(">", queries), "the failing check runs again on its interval")
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(anyStarted(w.upgrade(g))).To(BeFalse())
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(w.check(g, "ceph-health-status").Status.Results).To(ConsistOf(SatisfyAll(
		HaveField("Cluster", "alpha"), HaveField("Result", upgradev1.HealthCheckFailed), HaveField("Message", empty),
	)))

	g.Eventually(func(g Gomega) {
		c := w.check(g, "ceph-health-status")
		c.Spec.Prometheus.Query = `max(ceph_health_status)`
		g.Expect(mgmt.Client.Update(ctx, c)).To(Succeed())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(prom.Set(map[string]string{"__name__": "ceph_health_status", "job": "ceph"}, 0)).To(Succeed())
		g.Expect(w.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	g.Expect(prom.Queries()).To(ContainElements(`max(ceph_health_stauts)`, `max(ceph_health_status)`))
}

// TestSuccessThresholdAndInterval gates a rollout on an http check that
// passes from the start but needs 3 passes in a row, 5s apart: the first
// Machine starts only after the third pass, and the rollout says how many
// it has meanwhile, as for a Job check.
func TestSuccessThresholdAndInterval(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := t.Context()
	w := newWorld(t)
	ceph := newCephServer(t)
	ceph.healthy.Store(true)
	check := httpCheck(w.ns, "ceph", upgradev1.HealthCheckEndpoint{URL: ceph.URL + "/health"})
	check.Spec.SuccessThreshold = ptr.To[int32](3)
	g.Expect(mgmt.Client.Create(ctx, check)).To(Succeed())
	w.createPolicy("ceph")
	w.startManager()

	var messages sync.Map
	var firstStart time.Time
	g.Eventually(func(g Gomega) {
		u := w.upgrade(g)
		messages.Store(u.Status.BlockedBy, true)
		for _, m := range u.Status.Machines {
			if m.StartTime != nil && (firstStart.IsZero() || m.StartTime.Time.Before(firstStart)) {
				firstStart = m.StartTime.Time
			}
		}
		g.Expect(firstStart.IsZero()).To(BeFalse())
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	asked := ceph.times()
	g.Expect(len(asked)).To(BeNumerically(">=", 3))
	// metav1.Time is second-precise: compare to the second.
	g.Expect(firstStart).To(BeTemporally(">=", asked[2].Truncate(time.Second)), "no Machine starts before the third pass")
	for i := 1; i < 3; i++ {
		g.Expect(asked[i].Sub(asked[i-1])).To(BeNumerically(">=", 5*time.Second), "runs are an interval apart")
	}
	_, sawOne := messages.Load(`waiting for healthchecks to pass: "ceph": passed 1 of 3 times in a row`)
	_, sawTwo := messages.Load(`waiting for healthchecks to pass: "ceph": passed 2 of 3 times in a row`)
	g.Expect(sawOne && sawTwo).To(BeTrue(), "the rollout says how many passes it has")
	g.Eventually(func(g Gomega) {
		g.Expect(w.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
}
