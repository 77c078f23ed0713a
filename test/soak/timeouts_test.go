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
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestConnectRetries: the wait CAPI's ClusterCache announces after a
// failed connection to a workload cluster is recorded for its Cluster, as
// the controllers log it (seed 424242, soak-r2-c15: a request failed by the
// fault proxy as a new leader connected cost 30s); other lines are not.
func TestConnectRetries(t *testing.T) {
	g := NewWithT(t)
	c := newConnectRetries()
	now := time.Now()
	c.line(`I1204 21:26:10.559482   19887 cluster_cache.go:509] "Requeuing after 30s (connection creation failed)" controller="clustercache" controllerGroup="cluster.x-k8s.io" controllerKind="Cluster" Cluster="soak-r2-c15/r2c15" reconcileID="19ced73a"`, now)
	c.line(`I1204 21:26:11.405348   19887 cluster_cache.go:503] "Requeuing after 29.1s as connection creation already failed within the last 30s" controller="clustercache" Cluster="soak-r2-c15/r2c15"`, now)
	c.line(`I1204 21:26:11.405348   19887 cluster_cache.go:526] "Requeuing after 9.9s as health probe was already run within the last 10s" controller="clustercache" Cluster="soak-r2-c1/r2c1"`, now)
	g.Expect(c.of("soak-r2-c15/r2c15")).To(Equal([]interval{{from: now, to: now.Add(30 * time.Second)}}))
	g.Expect(c.of("soak-r2-c1/r2c1")).To(BeEmpty())
}

// TestOverlapCountsOnce: the time intervals cover counts each instant once,
// however many intervals cover it.
func TestOverlapCountsOnce(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	g.Expect(overlap([]interval{{from: at(0), to: at(10)}, {from: at(5), to: at(15)}, {from: at(20), to: at(25)}}, at(0), at(30))).To(Equal(20 * time.Second))
	g.Expect(overlap([]interval{{from: at(0), to: at(10)}, {from: at(2), to: at(4)}}, at(3), at(30))).To(Equal(7 * time.Second))
	g.Expect(overlap(nil, at(0), at(30))).To(BeZero())
}

// TestFailoverBound: invariant 0 allows a failover what client-go's leader
// election allows with the configured timeouts (the soak's defaults: a 6s
// lease, a 1s retry period jittered up to 2.2s, 2s requests), and one
// request timeout and one wait more for each Lease request the fault proxy
// failed.
func TestFailoverBound(t *testing.T) {
	g := NewWithT(t)
	cfg := Config{}
	cfg.Defaults()
	g.Expect(leaseRequestTimeout(cfg)).To(Equal(2 * time.Second))
	g.Expect(failoverBound(cfg, 0)).To(Equal(20400 * time.Millisecond))
	g.Expect(failoverBound(cfg, 2)).To(Equal(20400*time.Millisecond + 2*4200*time.Millisecond))
	g.Expect(leaseRequestTimeout(Config{RenewDeadline: time.Second})).To(Equal(time.Second), "controller-runtime's floor of 1s")
}
