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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestEtcdLeave takes members out of etcd as a control-plane provider does
// on a scale-down: a node forfeits its leadership and leaves, and no longer
// answers etcd calls while it keeps running; another is removed by its
// member ID through a peer; the last member cannot leave.
func TestEtcdLeave(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var cps []*talossim.Node
	for _, name := range []string{"cp-1", "cp-2", "cp-3"} {
		n, err := sim.AddNode(talossim.NodeConfig{Name: name, Version: "v1.12.4", ControlPlane: true})
		g.Expect(err).NotTo(HaveOccurred())
		cps = append(cps, n)
	}
	members := func(n *talossim.Node) []string {
		resp, err := dial(t, sim, n.Endpoint()).EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, m := range resp.GetMessages()[0].GetMembers() {
			names = append(names, m.GetHostname())
		}
		return names
	}
	g.Expect(members(cps[0])).To(ConsistOf("cp-1", "cp-2", "cp-3"))

	leaving := dial(t, sim, cps[2].Endpoint())
	_, err := leaving.EtcdForfeitLeadership(ctx, &machine.EtcdForfeitLeadershipRequest{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(leaving.EtcdLeaveCluster(ctx, &machine.EtcdLeaveClusterRequest{})).To(Succeed())
	g.Expect(members(cps[0])).To(ConsistOf("cp-1", "cp-2"))
	g.Expect(cps[2].EtcdMember()).To(BeFalse())
	g.Expect(cps[2].Up()).To(BeTrue(), "the node runs on; only its etcd stopped")
	_, err = leaving.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	g.Expect(status.Code(err)).To(Equal(codes.FailedPrecondition))
	g.Expect(sim.Calls("cp-3", talossim.RPCEtcdLeaveCluster)).To(Equal(1))

	resp, err := dial(t, sim, cps[0].Endpoint()).EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	g.Expect(err).NotTo(HaveOccurred())
	var id uint64
	for _, m := range resp.GetMessages()[0].GetMembers() {
		if m.GetHostname() == "cp-2" {
			id = m.GetId()
		}
	}
	g.Expect(dial(t, sim, cps[0].Endpoint()).EtcdRemoveMemberByID(ctx, &machine.EtcdRemoveMemberByIDRequest{MemberId: id})).To(Succeed())
	g.Expect(members(cps[0])).To(ConsistOf("cp-1"))

	err = dial(t, sim, cps[0].Endpoint()).EtcdLeaveCluster(ctx, &machine.EtcdLeaveClusterRequest{})
	g.Expect(status.Code(err)).To(Equal(codes.FailedPrecondition), "the last member stays")
}
