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

package soak

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Request-level fault kinds, counted per request.
const (
	faultRequest500     = "apiserver-request-500"
	faultRequest429     = "apiserver-request-429-retry-after"
	faultRequestTimeout = "apiserver-request-timeout"
	faultWatchDropped   = "apiserver-watch-dropped"
)

// requestFaults are injected by the FaultProxies all along the soak.
var requestFaults = []string{faultRequest500, faultRequest429, faultRequestTimeout, faultWatchDropped}

// requestTimeout is how long a request the proxy times out hangs before it
// is answered 504, as an apiserver that gave up on etcd answers.
const requestTimeout = 3 * time.Second

// FaultProxy is a TLS-terminating reverse proxy in front of one
// kube-apiserver that fails a fraction of the requests: 500, 429 with
// Retry-After, timeouts (504 after a while, half of them after the request
// reached the apiserver, as when the apiserver gave up waiting for an
// answer that etcd committed anyway), and watches cut mid-stream. It sits
// behind the apiserver's Gate, so that cutting the gate still refuses every
// connection. It forwards with the credentials of the rest.Config it was
// made with.
type FaultProxy struct {
	// Addr is the proxy's host:port.
	Addr   string
	server *httptest.Server
	proxy  *httputil.ReverseProxy
	// percent is the share of non-watch requests failed; watchPercent the
	// share of watches cut.
	percent, watchPercent float64
	count                 func(kind string)

	mu  sync.Mutex
	rng *rand.Rand
	// leaseFaults are when the proxy failed a request for a Lease (leader
	// election), for invariant 0.
	leaseFaults []time.Time
}

// LeaseFaults counts the requests for a Lease the proxy failed in [from,
// to].
func (p *FaultProxy) LeaseFaults(from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, t := range p.leaseFaults {
		if !t.Before(from) && !t.After(to) {
			n++
		}
	}
	return n
}

// NewFaultProxy starts a proxy to the apiserver of cfg. count is told every
// fault injected.
func NewFaultProxy(cfg *rest.Config, seed uint64, percent, watchPercent float64, count func(kind string)) (*FaultProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the apiserver address %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a transport to %s: %w", cfg.Host, err)
	}
	p := &FaultProxy{
		percent: percent, watchPercent: watchPercent, count: count,
		rng: rand.New(rand.NewPCG(seed, 0xfa17)), //nolint:gosec // Reproducible chaos, not cryptography.
		proxy: &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target)
				r.Out.Host = target.Host
			},
			Transport:     transport,
			FlushInterval: -1, // Watches stream.
			ErrorLog:      discardLog(),
		},
	}
	p.proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		writeStatus(w, http.StatusBadGateway, metav1.StatusReasonServiceUnavailable, "soak proxy: "+err.Error())
	}
	p.server = httptest.NewUnstartedServer(p)
	p.server.Config.ErrorLog = discardLog()
	p.server.StartTLS()
	p.Addr = strings.TrimPrefix(p.server.URL, "https://")
	return p, nil
}

// Close stops the proxy.
func (p *FaultProxy) Close() { p.server.Close() }

// roll reports whether an event of the given percent chance happens, and a
// uniform number in [0, 1) to pick its variant.
func (p *FaultProxy) roll(percent float64) (bool, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64()*100 < percent, p.rng.Float64()
}

// ServeHTTP forwards a request, or fails it.
func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if watch := r.URL.Query().Get("watch"); watch == "true" || watch == "1" {
		p.serveWatch(w, r)
		return
	}
	hit, variant := p.roll(p.percent)
	if !hit {
		p.proxy.ServeHTTP(w, r)
		return
	}
	if strings.Contains(r.URL.Path, "/leases/") {
		p.mu.Lock()
		p.leaseFaults = append(p.leaseFaults, time.Now())
		p.mu.Unlock()
	}
	switch {
	case variant < 1.0/3:
		p.count(faultRequest500)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "soak: injected internal error")
	case variant < 2.0/3:
		p.count(faultRequest429)
		w.Header().Set("Retry-After", "1")
		writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "soak: injected throttling, retry after 1s")
	default:
		p.count(faultRequestTimeout)
		if variant >= 5.0/6 {
			// The apiserver does the work; its answer is lost.
			rec := httptest.NewRecorder()
			p.proxy.ServeHTTP(rec, r)
		}
		t := time.NewTimer(requestTimeout)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		writeStatus(w, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "soak: injected timeout")
	}
}

// serveWatch forwards a watch, and cuts a share of them after 1 to 10s.
func (p *FaultProxy) serveWatch(w http.ResponseWriter, r *http.Request) {
	hit, variant := p.roll(p.watchPercent)
	if !hit {
		p.proxy.ServeHTTP(w, r)
		return
	}
	p.count(faultWatchDropped)
	ctx, cancel := context.WithTimeout(r.Context(), time.Second+time.Duration(variant*float64(9*time.Second)))
	defer cancel()
	// When the upstream watch is cancelled mid-body, the ReverseProxy
	// aborts the response: the client sees the stream break.
	p.proxy.ServeHTTP(w, r.WithContext(ctx))
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body, err := json.Marshal(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg, //nolint:gosec // An HTTP status code.
	})
	if err != nil {
		return // A Status always marshals.
	}
	_, _ = w.Write(body) // The client may be gone: nothing to report.
}

// CertificatePEM is the proxy's serving certificate, the CA of the
// kubeconfigs that reach it.
func (p *FaultProxy) CertificatePEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
}

// ThroughProxy rewrites a kubeconfig to reach the apiserver through g, a
// gate in front of p: the server becomes the gate's address and the CA the
// proxy's certificate. The credentials stay in the kubeconfig (the proxy
// forwards with its own), so that they are still planted as canaries.
func ThroughProxy(kc []byte, g *Gate, p *FaultProxy) ([]byte, error) {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return nil, fmt.Errorf("parsing a kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + g.Addr
		c.TLSServerName = ""
		c.CertificateAuthority = ""
		c.CertificateAuthorityData = p.CertificatePEM()
	}
	return clientcmd.Write(*cfg)
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
