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

package talossim_test

import (
	"context"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestRemoveNode removes a node, one of them while it reboots: it stops
// answering, leaves the etcd members, does not come back from its reboot,
// and its name can be used again.
func TestRemoveNode(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{RebootDuration: 300 * time.Millisecond})

	cp1, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.12.4", ControlPlane: true})
	g.Expect(err).NotTo(HaveOccurred())
	cp2, err := sim.AddNode(talossim.NodeConfig{Name: "cp-2", Version: "v1.12.4", ControlPlane: true})
	g.Expect(err).NotTo(HaveOccurred())
	w1, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	g.Expect(dial(t, sim, w1.Endpoint()).Reboot(ctx)).To(Succeed())
	g.Eventually(w1.Up, 5*time.Second, 10*time.Millisecond).Should(BeFalse())

	sim.RemoveNode("w-1")
	sim.RemoveNode("cp-2")
	sim.RemoveNode("unknown")

	g.Expect(sim.Node("w-1")).To(BeNil())
	g.Expect(sim.Node("cp-2")).To(BeNil())
	g.Expect(cp2.Up()).To(BeFalse())

	_, err = net.DialTimeout("tcp", cp2.Endpoint(), time.Second)
	g.Expect(err).To(HaveOccurred(), "a removed node does not answer")

	members, err := dial(t, sim, cp1.Endpoint()).EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(members.GetMessages()[0].GetMembers()).To(HaveLen(1))
	g.Expect(members.GetMessages()[0].GetMembers()[0].GetHostname()).To(Equal("cp-1"))

	// Well past the reboot, the removed node is still down.
	g.Consistently(w1.Up, time.Second, 50*time.Millisecond).Should(BeFalse())
	g.Expect(w1.Boots()).To(Equal(0))

	again, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Version()).To(Equal("v1.13.0"))
}
