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

package hosts

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestSimulatorsBoot boots machines of two Clusters with the same names:
// each Cluster has its own simulator, a second Boot finds the node that
// runs (even on another version than asked), Remove stops it and a Boot
// after it starts a new one.
func TestSimulatorsBoot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	s := NewSimulators(SimulatorsOptions{Simulator: talossim.Options{RebootDuration: 50 * time.Millisecond, Logf: t.Logf}})
	t.Cleanup(func() { _ = s.Close() })

	a := client.ObjectKey{Namespace: "ns", Name: "a"}
	b := client.ObjectKey{Namespace: "ns", Name: "b"}

	cp, err := s.Boot(ctx, Host{Cluster: a, Name: "m-0", Version: "v1.12.4", ControlPlane: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Version).To(Equal("v1.12.4"))

	other, err := s.Boot(ctx, Host{Cluster: b, Name: "m-0", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Address).NotTo(Equal(cp.Address))
	g.Expect(other.Version).To(Equal("v1.13.0"))
	g.Expect(s.Clusters()).To(Equal([]client.ObjectKey{a, b}))

	again, err := s.Boot(ctx, Host{Cluster: a, Name: "m-0", Version: "v1.13.0", ControlPlane: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(cp), "a node that runs is reported as it is, not booted again")

	simA, err := s.Simulator(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(simA.Nodes()).To(HaveLen(1))
	g.Expect(simA.Node("m-0").ControlPlane()).To(BeTrue())

	g.Expect(s.Remove(ctx, a, "m-0")).To(Succeed())
	g.Expect(s.Remove(ctx, a, "m-0")).To(Succeed(), "removing an unknown machine is no error")
	g.Expect(s.Remove(ctx, client.ObjectKey{Namespace: "ns", Name: "none"}, "m-0")).To(Succeed())
	g.Expect(simA.Node("m-0")).To(BeNil())

	reborn, err := s.Boot(ctx, Host{Cluster: a, Name: "m-0", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reborn.Version).To(Equal("v1.13.0"))

	_, err = s.Boot(ctx, Host{Cluster: a, Name: "m-1"})
	g.Expect(err).To(MatchError(ContainSubstring("needs a Cluster, a name and a version")))

	g.Expect(s.Close()).To(Succeed())
	_, err = s.Boot(ctx, Host{Cluster: a, Name: "m-2", Version: "v1.13.0"})
	g.Expect(err).To(MatchError(errClosed))
}
