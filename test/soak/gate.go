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
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// Gate is a TCP relay in front of a kube-apiserver. Everything the
// controller knows of an apiserver goes through its gate, so that cutting
// the gate is, to the controller, the apiserver being stopped: every open
// connection (watches included) drops and new ones are refused until Open.
// The apiserver and its etcd keep their data, as a restarted apiserver
// would. The observer and the simulators talk to the apiserver directly.
type Gate struct {
	// Addr is the gate's host:port.
	Addr     string
	upstream string

	mu    sync.Mutex
	lis   net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewGate opens a gate to upstream (host:port) on a free loopback port.
func NewGate(upstream string) (*Gate, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the gate to %s: %w", upstream, err)
	}
	g := &Gate{Addr: lis.Addr().String(), upstream: upstream, conns: map[net.Conn]struct{}{}}
	g.serve(lis)
	return g, nil
}

// Cut closes the listener and every relayed connection.
func (g *Gate) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lis == nil {
		return
	}
	_ = g.lis.Close()
	g.lis = nil
	for c := range g.conns {
		_ = c.Close()
	}
}

// Open listens again on the same address.
func (g *Gate) Open() error {
	g.mu.Lock()
	open := g.lis != nil
	g.mu.Unlock()
	if open {
		return nil
	}
	lis, err := net.Listen("tcp", g.Addr)
	if err != nil {
		return fmt.Errorf("reopening the gate on %s: %w", g.Addr, err)
	}
	g.serve(lis)
	return nil
}

// Close cuts the gate for good and waits for its goroutines.
func (g *Gate) Close() {
	g.Cut()
	g.wg.Wait()
}

func (g *Gate) serve(lis net.Listener) {
	g.mu.Lock()
	g.lis = lis
	g.mu.Unlock()
	g.wg.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			g.wg.Go(func() { g.relay(c) })
		}
	})
}

func (g *Gate) relay(c net.Conn) {
	up, err := net.Dial("tcp", g.upstream)
	if err != nil {
		_ = c.Close()
		return
	}
	g.mu.Lock()
	if g.lis == nil {
		g.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	g.conns[c], g.conns[up] = struct{}{}, struct{}{}
	g.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // A cut connection ends with an error: nothing to report.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, up)
	g.mu.Unlock()
}

// ThroughGate rewrites a kubeconfig's server to the gate's address; the
// apiserver's certificate is still checked, for the name it was issued to.
func ThroughGate(kc []byte, g *Gate) ([]byte, error) {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return nil, fmt.Errorf("parsing a kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, fmt.Errorf("parsing server %q: %w", c.Server, err)
		}
		if c.TLSServerName == "" {
			c.TLSServerName = u.Hostname()
		}
		u.Host = g.Addr
		c.Server = u.String()
	}
	return clientcmd.Write(*cfg)
}
