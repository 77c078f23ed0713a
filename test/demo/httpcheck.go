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

package demo

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
)

// healthEndpoint stands, with --http-check, for a workload's health
// endpoint that already says whether a node may go down: the first fails
// requests get 503 and a reason, the later ones 200 HEALTH_OK. The demo's
// ClusterHealthCheck is then an http check of its URL, which the manager
// asks itself: no Job, no Pod, no image.
type healthEndpoint struct {
	srv   *httptest.Server
	fails int

	mu         sync.Mutex
	asked      int
	failed     int
	lastReason string
}

func startHealthEndpoint(fails int) *healthEndpoint {
	h := &healthEndpoint{fails: fails}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

func (h *healthEndpoint) serve(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	h.asked++
	fail := h.failed < h.fails
	if fail {
		h.failed++
		h.lastReason = fmt.Sprintf("2 of 14 Pods not Ready in kube-system: coredns-7c65d6cfc9-x2x5p, cilium-9kq4d (simulated failure %d of %d)", h.failed, h.fails)
	}
	reason := h.lastReason
	h.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, reason)
		return
	}
	_, _ = io.WriteString(w, "HEALTH_OK")
}

// Close stops the endpoint.
func (h *healthEndpoint) Close() { h.srv.Close() }

// check returns the demo's ClusterHealthCheck as an http check of the
// endpoint.
func (h *healthEndpoint) check(interval time.Duration) *upgradev1.ClusterHealthCheck {
	return &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: checkName},
		Spec: upgradev1.ClusterHealthCheckSpec{
			HTTP: &upgradev1.HTTPHealthCheck{
				HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: h.srv.URL + "/healthz"},
				Body:                &upgradev1.HTTPBodyMatch{Contains: "HEALTH_OK"},
			},
			Interval: &metav1.Duration{Duration: interval},
		},
	}
}

// writeSummary says what the http check did.
func (h *healthEndpoint) writeSummary(out io.Writer, held time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	printf(out, "ClusterHealthCheck %s (http, %s): %s, %d failed", checkName, h.srv.URL, rolloutview.Plural(h.asked, "request"), h.failed)
	if h.failed > 0 {
		printf(out, " (last reason: \"HTTP 503 Service Unavailable: %s\"); it held the rollout %s in WaitingForHealthChecks", h.lastReason, rolloutview.FormatDuration(held))
	}
	printLine(out)
}
