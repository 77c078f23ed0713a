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
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

func newSim(t *testing.T, opts talossim.Options) *talossim.Simulator {
	t.Helper()

	if opts.RebootDuration == 0 {
		opts.RebootDuration = 100 * time.Millisecond
	}

	opts.Logf = t.Logf

	sim, err := talossim.New(opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sim.Close() })

	return sim
}

// dial returns a machinery client to endpoint with the simulator's
// talosconfig, as talosctl builds it.
func dial(t *testing.T, sim *talossim.Simulator, endpoint string) *talosclient.Client {
	t.Helper()
	g := NewWithT(t)

	raw, err := sim.TalosConfig("test")
	g.Expect(err).NotTo(HaveOccurred())

	cfg, err := clientconfig.FromBytes(raw)
	g.Expect(err).NotTo(HaveOccurred())

	c, err := talosclient.New(context.Background(), talosclient.WithConfig(cfg), talosclient.WithEndpoints(endpoint))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Close() })

	return c
}

func TestAddNode(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{})

	seen := map[string]bool{}

	for _, name := range []string{"cp-1", "cp-2", "w-1", "w-2", "w-3"} {
		n, err := sim.AddNode(talossim.NodeConfig{Name: name, Version: "v1.13.0"})
		g.Expect(err).NotTo(HaveOccurred())

		ip := net.ParseIP(n.Address())
		g.Expect(ip.IsLoopback()).To(BeTrue())
		g.Expect(seen).NotTo(HaveKey(n.Address()))
		seen[n.Address()] = true

		g.Expect(n.Endpoint()).To(Equal(net.JoinHostPort(n.Address(), "50000")))
	}

	_, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0"})
	g.Expect(err).To(MatchError(ContainSubstring("already exists")))

	_, err = sim.AddNode(talossim.NodeConfig{Name: "nameless"})
	g.Expect(err).To(HaveOccurred())

	g.Expect(sim.Nodes()).To(HaveLen(5))
	g.Expect(sim.Node("w-2").Name()).To(Equal("w-2"))
	g.Expect(sim.Node("nope")).To(BeNil())

	cfg, err := sim.TalosConfig("prod")
	g.Expect(err).NotTo(HaveOccurred())

	parsed, err := clientconfig.FromBytes(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parsed.Context).To(Equal("prod"))
	g.Expect(parsed.Contexts["prod"].Endpoints).To(HaveLen(5))
	g.Expect(parsed.Contexts["prod"].CA).NotTo(BeEmpty())
	g.Expect(parsed.Contexts["prod"].Crt).NotTo(BeEmpty())
	g.Expect(parsed.Contexts["prod"].Key).NotTo(BeEmpty())

	secret, err := sim.TalosConfigSecret("ns", "prod")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secret.Name).To(Equal("prod-talosconfig"))
	g.Expect(secret.Namespace).To(Equal("ns"))
	g.Expect(secret.Data).To(HaveKey("talosconfig"))
}

// TestNodeMetadata checks that a node routes requests by node metadata, as
// apid does, and fills response metadata in one-to-many mode.
func TestNodeMetadata(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sim := newSim(t, talossim.Options{})

	a, err := sim.AddNode(talossim.NodeConfig{Name: "a", Version: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	b, err := sim.AddNode(talossim.NodeConfig{Name: "b", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())

	c := dial(t, sim, a.Address())

	resp, err := c.Version(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.GetMessages()[0].GetVersion().GetTag()).To(Equal("v1.12.4"))
	g.Expect(resp.GetMessages()[0].GetMetadata()).To(BeNil())

	resp, err = c.Version(talosclient.WithNode(ctx, b.Address()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.GetMessages()[0].GetVersion().GetTag()).To(Equal("v1.13.0"))

	resp, err = c.Version(talosclient.WithNodes(ctx, b.Name()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.GetMessages()[0].GetMetadata().GetHostname()).To(Equal(b.Address()))

	g.Expect(sim.Calls("a", talossim.RPCVersion)).To(Equal(1))
	g.Expect(sim.Calls("b", talossim.RPCVersion)).To(Equal(2))
	g.Expect(sim.CallLog()).To(HaveLen(3))

	sim.ResetCallLog()
	g.Expect(sim.CallLog()).To(BeEmpty())

	_, err = c.Version(talosclient.WithNode(ctx, "10.0.0.99"))
	g.Expect(err).To(MatchError(ContainSubstring("no route")))
}

// recorder is a NodeUpdater that remembers what it was told.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) NodeRebooting(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()

	r.events = append(r.events, name+" rebooting")

	return nil
}

func (r *recorder) NodeBooted(_ context.Context, name, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()

	r.events = append(r.events, name+" booted "+version)

	return nil
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()

	return append([]string(nil), r.events...)
}

func TestRebootEventsAndUpdater(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := &recorder{}
	sim := newSim(t, talossim.Options{NodeUpdater: rec})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())

	bootID, bootTime := n.BootID(), n.BootTime()
	g.Expect(bootTime).To(BeTemporally("~", time.Now(), 2*time.Second))
	g.Expect(dial(t, sim, n.Address()).Reboot(ctx)).To(Succeed())

	g.Eventually(rec.get, 5*time.Second, 20*time.Millisecond).Should(Equal([]string{"w-1 rebooting", "w-1 booted v1.13.0"}))
	g.Expect(n.BootID()).NotTo(Equal(bootID))
	g.Expect(n.BootTime()).NotTo(BeTemporally("<", bootTime), "a boot time moves on with each boot")
	g.Expect(n.Boots()).To(Equal(1))
	g.Expect(n.Version()).To(Equal("v1.13.0"), "nothing was installed")

	// After the boot, the events replay ends with the node running and ready.
	ch := make(chan talosclient.EventResult)
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	g.Expect(dial(t, sim, n.Address()).EventsWatchV2(watchCtx, ch, talosclient.WithTailEvents(-1))).To(Succeed())

	var last *machine.MachineStatusEvent

	g.Eventually(func() bool {
		select {
		case ev := <-ch:
			if st, ok := ev.Event.Payload.(*machine.MachineStatusEvent); ok {
				last = st
			}
		default:
		}

		return last != nil && last.GetStage() == machine.MachineStatusEvent_RUNNING && last.GetStatus().GetReady()
	}, 5*time.Second, 10*time.Millisecond).Should(BeTrue())
}

func TestSetRebootDuration(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{RebootDuration: time.Hour})
	sim.SetRebootDuration(50 * time.Millisecond)

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(dial(t, sim, n.Address()).Reboot(context.Background())).To(Succeed())
	g.Eventually(n.Boots, 5*time.Second, 20*time.Millisecond).Should(Equal(1))
	g.Expect(n.Up()).To(BeTrue())
}

func TestDropRPCs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sim := newSim(t, talossim.Options{})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())

	n.InjectFault(talossim.Faults{DropRPCs: []string{talossim.RPCReboot}})
	c := dial(t, sim, n.Address())
	g.Expect(c.Reboot(ctx)).To(MatchError(ContainSubstring("was lost")))
	g.Expect(sim.Calls("w-1", talossim.RPCReboot)).To(BeZero(), "a lost request never reached the node")

	_, err = c.Version(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "only the named RPCs are lost")
	g.Consistently(n.Boots, 300*time.Millisecond, 50*time.Millisecond).Should(BeZero())

	n.InjectFault(talossim.Faults{})
	g.Expect(c.Reboot(ctx)).To(Succeed())
	g.Eventually(n.Boots, 5*time.Second, 20*time.Millisecond).Should(Equal(1))
}

func TestEtcdClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sim := newSim(t, talossim.Options{})

	for _, cfg := range []talossim.NodeConfig{
		{Name: "a-cp-0", EtcdCluster: "a"}, {Name: "a-cp-1", EtcdCluster: "a"}, {Name: "b-cp-0", EtcdCluster: "b"},
	} {
		cfg.Version, cfg.ControlPlane = "v1.13.0", true
		_, err := sim.AddNode(cfg)
		g.Expect(err).NotTo(HaveOccurred())
	}
	sim.Node("b-cp-0").InjectFault(talossim.Faults{EtcdUnhealthy: true})

	c := dial(t, sim, sim.Node("a-cp-0").Address())
	members, err := c.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, m := range members.GetMessages()[0].GetMembers() {
		names = append(names, m.GetHostname())
	}
	g.Expect(names).To(ConsistOf("a-cp-0", "a-cp-1"), "the members of the node's own etcd cluster")
	alarms, err := c.EtcdAlarmList(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(alarms.GetMessages()[0].GetMemberAlarms()).To(BeEmpty(), "another etcd cluster's alarm is not this one's")
}
