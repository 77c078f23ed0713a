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
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// proxyClient returns an HTTPS client that trusts the proxy.
func proxyClient(t *testing.T, p *FaultProxy) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CertificatePEM()) {
		t.Fatal("the proxy's certificate does not parse")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func TestFaultProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK)
			for {
				if _, err := w.Write([]byte(`{"type":"BOOKMARK"}` + "\n")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer upstream.Close()

	t.Run("forwards when no fault is drawn", func(t *testing.T) {
		g := NewWithT(t)
		p, err := NewFaultProxy(&rest.Config{Host: upstream.URL}, 1, 0, 0, func(kind string) { t.Errorf("unexpected fault %s", kind) })
		g.Expect(err).NotTo(HaveOccurred())
		defer p.Close()
		resp, err := proxyClient(t, p).Get("https://" + p.Addr + "/api/v1/nodes")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close() //nolint:errcheck // A test body.
		body, _ := io.ReadAll(resp.Body)
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		g.Expect(string(body)).To(Equal("ok"))
	})

	t.Run("fails every request with 500, 429 and Retry-After, or 504", func(t *testing.T) {
		g := NewWithT(t)
		var mu sync.Mutex
		counts := map[string]int{}
		p, err := NewFaultProxy(&rest.Config{Host: upstream.URL}, 2, 100, 0, func(kind string) { mu.Lock(); counts[kind]++; mu.Unlock() })
		g.Expect(err).NotTo(HaveOccurred())
		defer p.Close()
		c := proxyClient(t, p)
		const n = 24
		codes := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				resp, err := c.Get("https://" + p.Addr + "/api/v1/nodes")
				if err != nil {
					codes <- 0
					return
				}
				defer resp.Body.Close() //nolint:errcheck // A test body.
				if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
					codes <- -1
					return
				}
				codes <- resp.StatusCode
			})
		}
		wg.Wait()
		close(codes)
		seen := map[int]int{}
		for code := range codes {
			seen[code]++
		}
		g.Expect(seen).To(HaveKey(http.StatusInternalServerError))
		g.Expect(seen).To(HaveKey(http.StatusTooManyRequests))
		g.Expect(seen).To(HaveKey(http.StatusGatewayTimeout))
		g.Expect(seen[http.StatusInternalServerError] + seen[http.StatusTooManyRequests] + seen[http.StatusGatewayTimeout]).To(Equal(n))
		g.Expect(counts[faultRequest500] + counts[faultRequest429] + counts[faultRequestTimeout]).To(Equal(n))
	})

	t.Run("cuts watches", func(t *testing.T) {
		g := NewWithT(t)
		var cut atomic.Int32
		p, err := NewFaultProxy(&rest.Config{Host: upstream.URL}, 3, 0, 100, func(kind string) {
			if kind == faultWatchDropped {
				cut.Add(1)
			}
		})
		g.Expect(err).NotTo(HaveOccurred())
		defer p.Close()
		c := proxyClient(t, p)
		c.Timeout = 20 * time.Second
		start := time.Now()
		resp, err := c.Get("https://" + p.Addr + "/api/v1/nodes?watch=true")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close() //nolint:errcheck // A test body.
		_, err = io.ReadAll(resp.Body)
		g.Expect(err).To(HaveOccurred(), "the stream breaks instead of ending")
		g.Expect(time.Since(start)).To(BeNumerically("<", 11*time.Second))
		g.Expect(cut.Load()).To(Equal(int32(1)))
	})
}

func TestOverlap(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ivs := []interval{{from: at(0), to: at(10)}, {from: at(20), to: at(25)}, {from: at(30)}}
	g.Expect(overlap(ivs, at(5), at(22))).To(Equal(7 * time.Second))
	g.Expect(overlap(ivs, at(11), at(19))).To(Equal(time.Duration(0)))
	g.Expect(overlap(ivs, at(28), at(40))).To(Equal(10*time.Second), "an open interval lasts until the end of the span")
}
