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

package talos_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

const (
	testNamespace = "default"
	testCluster   = "prod"
	factoryV113   = "factory.talos.dev/metal-installer/" + talos.DefaultSchematicID + ":v1.13.0"
	ghcrV113      = "ghcr.io/siderolabs/installer:v1.13.0"
	otherSchem    = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

// env is a simulator, the management objects pointing at it and a dialer.
type env struct {
	sim     *talossim.Simulator
	reader  client.Reader
	cluster *clusterv1.Cluster
	dialer  *talos.SecretDialer
}

// newEnv starts a simulator with nodes and stores its talosconfig in the
// Cluster's Secret.
func newEnv(t *testing.T, nodes []talossim.NodeConfig, opts ...talos.DialerOption) (*env, []*talossim.Node) {
	t.Helper()
	g := NewWithT(t)

	sim, err := talossim.New(talossim.Options{RebootDuration: 200 * time.Millisecond, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sim.Close() })

	var added []*talossim.Node

	for _, cfg := range nodes {
		n, err := sim.AddNode(cfg)
		g.Expect(err).NotTo(HaveOccurred())

		added = append(added, n)
	}

	talosconfig, err := sim.TalosConfig(testCluster)
	g.Expect(err).NotTo(HaveOccurred())

	return newEnvWithConfig(t, sim, talosconfig, opts...), added
}

func newEnvWithConfig(t *testing.T, sim *talossim.Simulator, talosconfig []byte, opts ...talos.DialerOption) *env {
	t.Helper()

	var objs []client.Object
	if talosconfig != nil {
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testCluster + "-talosconfig"},
			Data:       map[string][]byte{"talosconfig": talosconfig},
		})
	}

	reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
	opts = append([]talos.DialerOption{talos.WithTimeout(3 * time.Second)}, opts...)

	return &env{
		sim:     sim,
		reader:  reader,
		cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testCluster}},
		dialer:  talos.NewDialer(reader, opts...),
	}
}

func machineFor(n *talossim.Node) *clusterv1.Machine {
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: n.Name()},
		Status: clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{
			{Type: clusterv1.MachineHostName, Address: n.Name()},
			{Type: clusterv1.MachineInternalIP, Address: n.Address()},
		}},
	}
}

// dial opens a client to n and closes it at the end of the test.
func (e *env) dial(t *testing.T, n *talossim.Node) talos.Client {
	t.Helper()

	c, err := e.dialer.Dial(context.Background(), e.cluster, machineFor(n))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Close() })

	return c
}

// observe reads version and boot ID with a fresh client, as a reconcile
// would after a reboot.
func (e *env) observe(t *testing.T, n *talossim.Node) func() (string, error) {
	t.Helper()

	return func() (string, error) {
		c, err := e.dialer.Dial(context.Background(), e.cluster, machineFor(n))
		if err != nil {
			return "", err
		}
		defer c.Close() //nolint:errcheck // closing a test client cannot fail usefully.

		v, err := c.Version(context.Background())
		if err != nil {
			return "", err
		}

		b, err := c.BootID(context.Background())

		return v + "/" + b, err
	}
}

// upgradeAndReboot upgrades through c and reboots when the node does not
// reboot by itself, as the rollout engine does.
func upgradeAndReboot(t *testing.T, c talos.Client, image string) {
	t.Helper()
	g := NewWithT(t)

	res, err := c.Upgrade(context.Background(), image, talos.UpgradeOptions{AllowSelfReboot: true})
	g.Expect(err).NotTo(HaveOccurred())

	if !res.RebootsItself {
		g.Expect(c.Reboot(context.Background(), upgradev1.RebootModeDefault)).To(Succeed())
	}
}

func TestReadNode(t *testing.T) {
	tests := []struct {
		name          string
		node          talossim.NodeConfig
		wantSchematic string
	}{
		{name: "1.12 node without schematic", node: talossim.NodeConfig{Name: "w-112", Version: "v1.12.4"}},
		{
			name:          "1.13 node with schematic and extensions",
			node:          talossim.NodeConfig{Name: "w-113", Version: "v1.13.0", Schematic: otherSchem, Extensions: []talossim.Extension{{Name: "iscsi-tools", Version: "v0.2.0"}}},
			wantSchematic: otherSchem,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			e, nodes := newEnv(t, []talossim.NodeConfig{tt.node})
			c := e.dial(t, nodes[0])

			v, err := c.Version(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v).To(Equal(tt.node.Version))

			bootID, err := c.BootID(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bootID).To(Equal(nodes[0].BootID()))

			bootTime, err := c.BootTime(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bootTime).To(BeTemporally("==", nodes[0].BootTime()))
			g.Expect(bootTime.Location()).To(Equal(time.UTC))

			schematic, err := c.Schematic(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(schematic).To(Equal(tt.wantSchematic))

			g.Expect(e.sim.Calls(tt.node.Name, talossim.RPCVersion)).To(Equal(1))
			g.Expect(e.sim.Calls(tt.node.Name, talossim.RPCRead)).To(Equal(1))
			g.Expect(e.sim.Calls(tt.node.Name, talossim.RPCSystemStat)).To(Equal(1))
		})
	}
}

func TestUpgradeLifecycleAPI(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, Schematic: otherSchem}})
	n := nodes[0]
	c := e.dial(t, n)
	bootID := n.BootID()

	target := "factory.talos.dev/metal-installer/" + talos.DefaultSchematicID + ":v1.13.1"
	res, err := c.Upgrade(ctx, target, talos.UpgradeOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RebootsItself).To(BeFalse())
	g.Expect(n.StagedImage()).To(Equal(target))
	g.Expect(n.BootID()).To(Equal(bootID), "the lifecycle upgrade must not reboot")

	g.Expect(c.Reboot(ctx, upgradev1.RebootModePowerCycle)).To(Succeed())
	g.Eventually(e.observe(t, n), 10*time.Second, 50*time.Millisecond).Should(And(HavePrefix("v1.13.1/"), Not(HaveSuffix(bootID))))
	g.Expect(n.RebootModes()).To(Equal([]string{"POWERCYCLE"}), "the reboot mode reaches the node")

	c2 := e.dial(t, n)
	schematic, err := c2.Schematic(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(schematic).To(Equal(talos.DefaultSchematicID))

	g.Expect(e.sim.Calls("cp-1", talossim.RPCImagePull)).To(Equal(1))
	g.Expect(e.sim.Calls("cp-1", talossim.RPCUpgrade)).To(Equal(1))
	g.Expect(e.sim.Calls("cp-1", talossim.RPCReboot)).To(Equal(1))
	g.Expect(e.sim.Calls("cp-1", talossim.RPCLegacyUpgrade)).To(Equal(0))
}

func TestUpgradeLegacyAPI(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.12.4"}})
	n := nodes[0]
	c := e.dial(t, n)
	bootID := n.BootID()

	// Not allowed to reboot the node: no call is made.
	_, err := c.Upgrade(ctx, ghcrV113, talos.UpgradeOptions{})
	g.Expect(err).To(MatchError(talos.ErrRebootsItself))
	g.Expect(e.sim.Calls("w-1", talossim.RPCLegacyUpgrade)).To(Equal(0))
	g.Expect(n.BootID()).To(Equal(bootID))

	stage, err := c.Stage(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stage).To(Equal(talos.StageRunning))

	// Meant for another boot: no call is made.
	_, err = c.Upgrade(ctx, ghcrV113, talos.UpgradeOptions{AllowSelfReboot: true, BootID: "another-boot"})
	g.Expect(err).To(MatchError(talos.ErrBootedSince))
	g.Expect(e.sim.Calls("w-1", talossim.RPCLegacyUpgrade)).To(Equal(0))

	res, err := c.Upgrade(ctx, ghcrV113, talos.UpgradeOptions{AllowSelfReboot: true, RebootMode: upgradev1.RebootModePowerCycle, BootID: bootID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RebootsItself).To(BeTrue())
	g.Expect(n.RebootModes()).To(Equal([]string{"POWERCYCLE"}), "the legacy upgrade, which reboots, carries the reboot mode")
	g.Eventually(e.observe(t, n), 10*time.Second, 50*time.Millisecond).Should(And(HavePrefix("v1.13.0/"), Not(HaveSuffix(bootID))))

	g.Expect(e.sim.Calls("w-1", talossim.RPCLegacyUpgrade)).To(Equal(1))
	g.Expect(e.sim.Calls("w-1", talossim.RPCUpgrade)).To(Equal(0))
	g.Expect(e.sim.Calls("w-1", talossim.RPCReboot)).To(Equal(0))

	stage, err = e.dial(t, n).Stage(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stage).To(Equal(talos.StageRunning), "up again on the new boot")
}

// TestUpgradeLegacyAPITwice makes the legacy upgrade call twice at once, as
// a controller that makes a lost call again may: the node runs one upgrade
// sequence and reboots once. After a failed install it runs none, and its
// event log says one started.
func TestUpgradeLegacyAPITwice(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.12.4"}, {Name: "w-2", Version: "v1.12.4"}})
	opts := talos.UpgradeOptions{AllowSelfReboot: true}

	n := nodes[0]
	bootID := n.BootID()
	// Both connections are open before the calls: the second one reaches
	// the node well before its reboot takes the API down.
	clients := []talos.Client{e.dial(t, n), e.dial(t, n)}
	for _, c := range clients {
		_, err := c.Version(ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, c := range clients {
		_, err := c.Upgrade(ctx, ghcrV113, opts)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Eventually(e.observe(t, n), 10*time.Second, 50*time.Millisecond).Should(And(HavePrefix("v1.13.0/"), Not(HaveSuffix(bootID))))
	g.Consistently(n.Boots, time.Second, 50*time.Millisecond).Should(Equal(1), "one upgrade sequence, one reboot")
	g.Expect(e.sim.Calls("w-1", talossim.RPCLegacyUpgrade)).To(Equal(2))

	failing := nodes[1]
	failing.InjectFault(talossim.Faults{UpgradeExitCode: 1})
	c := e.dial(t, failing)
	started, err := c.UpgradeStarted(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(started).To(BeFalse(), "no upgrade on this boot yet")
	_, err = c.Upgrade(ctx, ghcrV113, opts)
	g.Expect(err).NotTo(HaveOccurred(), "before Talos 1.13 the install runs after the call returns")
	g.Eventually(func() (bool, error) { return c.UpgradeStarted(ctx) }, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "its event log says an upgrade started")
	g.Consistently(func() (talos.MachineStage, error) { return c.Stage(ctx) }, time.Second, 50*time.Millisecond).Should(Equal(talos.StageRunning), "and none runs now")
	g.Expect(failing.Boots()).To(BeZero())
}

// TestInstallOneAtATime installs on a node of Talos 1.13 while another
// install runs on it: the node refuses it (ErrInstallInProgress), as its
// lifecycle service does; an install whose caller goes away runs to its
// end, and the next one installs once it ended.
func TestInstallOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "cp-1", Version: "v1.13.0", ControlPlane: true}})
	n := nodes[0]
	n.InjectFault(talossim.Faults{InstallDelay: 2 * time.Second})
	target := "ghcr.io/siderolabs/installer:v1.13.1"

	first, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.dial(t, n).Upgrade(first, target, talos.UpgradeOptions{})
		done <- err
	}()
	g.Eventually(func() int { return e.sim.Calls("cp-1", talossim.RPCUpgrade) }, 10*time.Second, 20*time.Millisecond).Should(Equal(1))

	_, err := e.dial(t, n).Upgrade(ctx, target, talos.UpgradeOptions{})
	g.Expect(err).To(MatchError(talos.ErrInstallInProgress))
	g.Expect(err).NotTo(MatchError(talos.ErrUpgradeInterrupted), "the node answered: nothing was done")

	stop()
	g.Eventually(done, 10*time.Second).Should(Receive(HaveOccurred()))
	g.Eventually(n.StagedImage, 10*time.Second, 50*time.Millisecond).Should(Equal(target), "the install ran to its end without its caller")

	n.InjectFault(talossim.Faults{})
	g.Eventually(func() error {
		_, err := e.dial(t, n).Upgrade(ctx, target, talos.UpgradeOptions{})
		return err
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "the lock goes with the install")
	g.Expect(e.sim.Calls("cp-1", talossim.RPCUpgrade)).To(BeNumerically(">=", 3))
}

func TestFaults(t *testing.T) {
	ctx := context.Background()

	t.Run("upgrade exits non-zero", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}})
		nodes[0].InjectFault(talossim.Faults{UpgradeExitCode: 1})

		_, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{})
		g.Expect(err).To(MatchError(talos.ErrUpgradeFailed))
		g.Expect(err.Error()).To(And(ContainSubstring("exited with code 1"), ContainSubstring("failed to install bootloader")))
		g.Expect(nodes[0].StagedImage()).To(BeEmpty())
	})

	t.Run("legacy upgrade fails after its acknowledgement", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.12.4"}})
		nodes[0].InjectFault(talossim.Faults{UpgradeExitCode: 1})
		bootID := nodes[0].BootID()

		res, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{AllowSelfReboot: true})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RebootsItself).To(BeTrue())
		g.Consistently(e.observe(t, nodes[0]), time.Second, 100*time.Millisecond).Should(Equal("v1.12.4/" + bootID))
	})

	t.Run("the answer to a legacy upgrade is lost", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.12.4"}})
		nodes[0].InjectFault(talossim.Faults{LoseResponseRPCs: []string{talossim.RPCLegacyUpgrade}})
		bootID := nodes[0].BootID()

		_, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{AllowSelfReboot: true})
		g.Expect(err).To(MatchError(talos.ErrUpgradeInterrupted), "the request was sent: its outcome is unknown")
		g.Expect(err).To(MatchError(talos.ErrUnreachable))
		g.Eventually(e.observe(t, nodes[0]), 10*time.Second, 50*time.Millisecond).Should(And(HavePrefix("v1.13.0/"), Not(HaveSuffix(bootID))), "the node acted on it")
	})

	t.Run("a legacy upgrade request is lost", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.12.4"}})
		nodes[0].InjectFault(talossim.Faults{DropRPCs: []string{talossim.RPCLegacyUpgrade}})

		_, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{AllowSelfReboot: true})
		g.Expect(err).To(MatchError(talos.ErrUpgradeInterrupted), "a client cannot tell a lost request from a lost answer")
		g.Expect(e.sim.Calls("w-1", talossim.RPCLegacyUpgrade)).To(Equal(0))
	})

	t.Run("the end of an install stream is lost after its exit code", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}})
		nodes[0].InjectFault(talossim.Faults{LoseResponseRPCs: []string{talossim.RPCUpgrade}})

		_, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "the exit code came: the outcome is known")
		g.Expect(nodes[0].StagedImage()).NotTo(BeEmpty())
	})

	t.Run("an install request is lost", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}})
		nodes[0].InjectFault(talossim.Faults{DropRPCs: []string{talossim.RPCUpgrade}})

		_, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{})
		g.Expect(err).To(MatchError(talos.ErrUpgradeInterrupted))
		g.Expect(nodes[0].StagedImage()).To(BeEmpty())
	})

	t.Run("slow pull exceeds the install timeout", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}}, talos.WithInstallTimeout(500*time.Millisecond))
		nodes[0].InjectFault(talossim.Faults{PullDelay: 5 * time.Second})

		_, err := e.dial(t, nodes[0]).Upgrade(ctx, ghcrV113, talos.UpgradeOptions{})
		g.Expect(err).To(MatchError(talos.ErrDeadlineExceeded))
		g.Expect(err).NotTo(MatchError(talos.ErrUpgradeInterrupted), "no upgrade request was sent")
		g.Expect(e.sim.Calls("w-1", talossim.RPCUpgrade)).To(Equal(0))
	})

	t.Run("RPC times out", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}}, talos.WithTimeout(300*time.Millisecond))
		nodes[0].InjectFault(talossim.Faults{HangRPCs: []string{talossim.RPCVersion}})
		c := e.dial(t, nodes[0])

		_, err := c.Version(ctx)
		g.Expect(err).To(MatchError(talos.ErrDeadlineExceeded))

		_, err = c.BootID(ctx)
		g.Expect(err).NotTo(HaveOccurred(), "only Version hangs")
	})

	for _, version := range []string{"v1.12.4", "v1.13.0"} {
		t.Run("A/B rollback boots the old version from "+version, func(t *testing.T) {
			g := NewWithT(t)
			e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: version}})
			nodes[0].InjectFault(talossim.Faults{Rollback: true})
			bootID := nodes[0].BootID()

			upgradeAndReboot(t, e.dial(t, nodes[0]), "ghcr.io/siderolabs/installer:v1.13.1")
			g.Eventually(e.observe(t, nodes[0]), 10*time.Second, 50*time.Millisecond).Should(And(HavePrefix(version+"/"), Not(HaveSuffix(bootID))))
		})
	}

	t.Run("node never comes back", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}}, talos.WithTimeout(time.Second))
		nodes[0].InjectFault(talossim.Faults{NeverComesBack: true})

		g.Expect(e.dial(t, nodes[0]).Reboot(ctx, upgradev1.RebootModeDefault)).To(Succeed())
		g.Eventually(func() error { _, err := e.observe(t, nodes[0])(); return err }, 5*time.Second, 50*time.Millisecond).
			Should(MatchError(talos.ErrUnreachable))
		g.Consistently(nodes[0].Up, time.Second, 100*time.Millisecond).Should(BeFalse())
	})

	t.Run("etcd member unhealthy", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{
			{Name: "cp-1", Version: "v1.13.0", ControlPlane: true},
			{Name: "cp-2", Version: "v1.13.0", ControlPlane: true},
			{Name: "cp-3", Version: "v1.13.0", ControlPlane: true},
			{Name: "w-1", Version: "v1.13.0"},
		})

		health, err := e.dial(t, nodes[0]).EtcdHealth(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(health.Members).To(HaveLen(3))
		g.Expect(health.Members).To(HaveEach(HaveField("Healthy", BeTrue())))

		nodes[1].InjectFault(talossim.Faults{EtcdUnhealthy: true})

		health, err = e.dial(t, nodes[0]).EtcdHealth(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(health.Members).To(ContainElements(
			talos.EtcdMember{Name: "cp-1", Healthy: true},
			HaveField("Name", "cp-2"),
			talos.EtcdMember{Name: "cp-3", Healthy: true},
		))
		for _, m := range health.Members {
			if m.Name == "cp-2" {
				g.Expect(m.Healthy).To(BeFalse())
				g.Expect(m.Message).NotTo(BeEmpty())
			}
		}

		// A member whose node is down is unhealthy too.
		nodes[1].InjectFault(talossim.Faults{NeverComesBack: true})
		g.Expect(e.dial(t, nodes[1]).Reboot(ctx, upgradev1.RebootModeDefault)).To(Succeed())
		g.Eventually(nodes[1].Up, 5*time.Second, 20*time.Millisecond).Should(BeFalse())

		health, err = e.dial(t, nodes[0]).EtcdHealth(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(health.Members).To(ContainElement(And(HaveField("Name", "cp-2"), HaveField("Healthy", BeFalse()))))
	})
}

func TestCredentialErrors(t *testing.T) {
	ctx := context.Background()
	node := []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}}

	t.Run("missing Secret", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)
		e = newEnvWithConfig(t, e.sim, nil)

		_, err := e.dialer.Dial(ctx, e.cluster, machineFor(nodes[0]))
		g.Expect(err).To(MatchError(talos.ErrTalosConfigNotFound))
		g.Expect(err).To(MatchError(talos.ErrNotDialed))
		g.Expect(err.Error()).To(ContainSubstring("prod-talosconfig"))
	})

	t.Run("Secret not read: the management apiserver fails", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)
		failing := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewInternalError(errors.New("injected"))
		}}
		reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(failing).Build()

		_, err := talos.NewDialer(reader).Dial(ctx, e.cluster, machineFor(nodes[0]))
		g.Expect(err).To(MatchError(talos.ErrNotDialed), "an error of the management apiserver says nothing of the node")
		g.Expect(err.Error()).To(HavePrefix(`reading talosconfig Secret "default/prod-talosconfig": `), "ErrNotDialed adds nothing to the message")
		g.Expect(e.sim.Calls("w-1", talossim.RPCVersion)).To(Equal(0))
	})

	t.Run("garbage talosconfig", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)
		secretText := "context: [this is not: a talosconfig, s3cr3t"
		e = newEnvWithConfig(t, e.sim, []byte(secretText))

		_, err := e.dialer.Dial(ctx, e.cluster, machineFor(nodes[0]))
		g.Expect(err).To(MatchError(talos.ErrTalosConfigInvalid))
		g.Expect(err).To(MatchError(talos.ErrNotDialed))
		g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"), "errors never quote the talosconfig")
	})

	t.Run("talosconfig without credentials", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)
		e = newEnvWithConfig(t, e.sim, []byte("context: prod\ncontexts:\n  prod:\n    endpoints: [10.0.0.1]\n"))

		_, err := e.dialer.Dial(ctx, e.cluster, machineFor(nodes[0]))
		g.Expect(err).To(MatchError(talos.ErrTalosConfigInvalid))
	})

	t.Run("wrong CA", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)

		other, err := talossim.New(talossim.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = other.Close() })

		foreign, err := other.TalosConfig(testCluster)
		g.Expect(err).NotTo(HaveOccurred())

		e = newEnvWithConfig(t, e.sim, foreign)
		c, err := e.dialer.Dial(ctx, e.cluster, machineFor(nodes[0]))
		g.Expect(err).NotTo(HaveOccurred())
		defer c.Close() //nolint:errcheck // closing a test client cannot fail usefully.

		_, err = c.Version(ctx)
		g.Expect(err).To(MatchError(talos.ErrTLS))
		g.Expect(e.sim.Calls("w-1", talossim.RPCVersion)).To(Equal(0))
	})

	t.Run("no address", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)
		m := machineFor(nodes[0])
		m.Status.Addresses = m.Status.Addresses[:1]

		_, err := e.dialer.Dial(ctx, e.cluster, m)
		g.Expect(err).To(MatchError(talos.ErrNoAddress))
		g.Expect(err).To(MatchError(talos.ErrNotDialed))
	})

	t.Run("node unreachable", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, node)
		g.Expect(e.sim.Close()).To(Succeed())

		_, err := e.dial(t, nodes[0]).Version(ctx)
		g.Expect(err).To(MatchError(talos.ErrUnreachable))
		g.Expect(errors.Is(err, talos.ErrTLS)).To(BeFalse())
		g.Expect(errors.Is(err, talos.ErrNotDialed)).To(BeFalse(), "an error talking to the node is not one of dialing it")
	})
}

// TestConfigCache reuses a parsed talosconfig within its TTL, and reads the
// Secret again after a TLS failure, so that a rotated talosconfig is picked
// up at once.
func TestConfigCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}})

	// Start from a foreign talosconfig, cached for an hour.
	other, err := talossim.New(talossim.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = other.Close() })
	foreign, err := other.TalosConfig(testCluster)
	g.Expect(err).NotTo(HaveOccurred())
	e = newEnvWithConfig(t, e.sim, foreign, talos.WithConfigCacheTTL(time.Hour))

	c, err := e.dialer.Dial(ctx, e.cluster, machineFor(nodes[0]))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Version(ctx)
	g.Expect(err).To(MatchError(talos.ErrTLS))
	_ = c.Close()

	// The talosconfig is rotated: the TLS failure dropped the cached copy.
	good, err := e.sim.TalosConfig(testCluster)
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	writer := e.reader.(client.Client)
	g.Expect(writer.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: testCluster + "-talosconfig"}, secret)).To(Succeed())
	secret.Data["talosconfig"] = good
	g.Expect(writer.Update(ctx, secret)).To(Succeed())

	version, err := e.dial(t, nodes[0]).Version(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(version).To(Equal("v1.13.0"))

	// Within the TTL, the Secret is not read again: deleting it changes nothing.
	g.Expect(writer.Delete(ctx, secret)).To(Succeed())
	_, err = e.dial(t, nodes[0]).Version(ctx)
	g.Expect(err).NotTo(HaveOccurred())
}

// patchConfig returns cfg with a strategic merge patch applied, as
// "talosctl patch machineconfig" makes it.
func patchConfig(t *testing.T, cfg []byte, patch string) []byte {
	t.Helper()
	g := NewWithT(t)

	p, err := configpatcher.LoadPatch([]byte(patch))
	g.Expect(err).NotTo(HaveOccurred())

	out, err := configpatcher.Apply(configpatcher.WithBytes(cfg), []configpatcher.Patch{p})
	g.Expect(err).NotTo(HaveOccurred())

	data, err := out.Bytes()
	g.Expect(err).NotTo(HaveOccurred())

	return data
}

const (
	kubeletPatch = "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.2\n"
	filesPatch   = "machine:\n  files:\n    - path: /var/etc/tollgate\n      content: hello\n      permissions: 0o644\n      op: create\n"
)

func TestMachineConfig(t *testing.T) {
	g := NewWithT(t)
	e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"}})

	got, err := e.dial(t, nodes[0]).MachineConfig(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes[0].MachineConfig()).To(Equal(got))
	g.Expect(e.sim.Calls("cp-1", talossim.RPCResourceGet)).To(Equal(1))
}

func TestApplyConfiguration(t *testing.T) {
	tests := []struct {
		name        string
		patch       string
		data        []byte // instead of the patched configuration
		mode        talos.ApplyMode
		dryRun      bool
		wantErr     error
		wantResult  talos.ApplyResult
		wantApplied bool // the node runs it afterwards
		wantReboot  bool
	}{
		{
			name: "no-reboot", patch: kubeletPatch, mode: talos.ApplyModeNoReboot,
			wantResult: talos.ApplyResult{Mode: talos.ApplyModeNoReboot}, wantApplied: true,
		},
		{
			name: "no-reboot of a change that needs a reboot", patch: filesPatch, mode: talos.ApplyModeNoReboot,
			wantErr: talos.ErrRebootRequired,
		},
		{
			name: "auto without a reboot", patch: kubeletPatch, mode: talos.ApplyModeAuto,
			wantResult: talos.ApplyResult{Mode: talos.ApplyModeNoReboot}, wantApplied: true,
		},
		{
			name: "auto with a reboot", patch: filesPatch, mode: talos.ApplyModeAuto,
			wantResult: talos.ApplyResult{Mode: talos.ApplyModeReboot, RebootRequired: true}, wantApplied: true, wantReboot: true,
		},
		{
			name: "reboot", patch: kubeletPatch, mode: talos.ApplyModeReboot,
			wantResult: talos.ApplyResult{Mode: talos.ApplyModeReboot, RebootRequired: true}, wantApplied: true, wantReboot: true,
		},
		{
			name: "staged", patch: filesPatch, mode: talos.ApplyModeStaged,
			wantResult: talos.ApplyResult{Mode: talos.ApplyModeStaged, RebootRequired: true},
		},
		{
			name: "dry run of auto", patch: filesPatch, mode: talos.ApplyModeAuto, dryRun: true,
			wantResult: talos.ApplyResult{Mode: talos.ApplyModeReboot, RebootRequired: true},
		},
		{
			name: "a configuration that does not load", data: []byte("version: v1alpha1\nmachine: ["), mode: talos.ApplyModeAuto,
			wantErr: talos.ErrInvalidConfig,
		},
		{
			name: "an unknown mode", patch: kubeletPatch, mode: "try",
			wantErr: errors.New(`apply mode "try" is not one of "auto", "no-reboot", "reboot" or "staged"`),
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"}})
			n := nodes[0]
			bootID := n.BootID()

			before, err := n.MachineConfig()
			g.Expect(err).NotTo(HaveOccurred())

			cfg := tt.data
			if cfg == nil {
				cfg = patchConfig(t, before, tt.patch)
			}

			res, err := e.dial(t, n).ApplyConfiguration(ctx, cfg, tt.mode, tt.dryRun)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(err).NotTo(MatchError(ContainSubstring("diff")), "the error holds no configuration values")
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res).To(MatchFields(IgnoreExtras, Fields{
					"Mode":           Equal(tt.wantResult.Mode),
					"RebootRequired": Equal(tt.wantResult.RebootRequired),
				}))
			}

			if tt.dryRun {
				g.Expect(res.Details).To(ContainSubstring("Dry run summary"))
			}

			if tt.wantReboot {
				g.Eventually(e.observe(t, n), 10*time.Second, 50*time.Millisecond).Should(And(HavePrefix("v1.13.0/"), Not(HaveSuffix(bootID))))
			} else {
				g.Expect(n.BootID()).To(Equal(bootID))
			}

			want := before
			if tt.wantApplied {
				want = cfg
			}

			got, err := e.dial(t, n).MachineConfig(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want), "the configuration read back")
		})
	}
}

func TestApplyConfigurationFaults(t *testing.T) {
	ctx := context.Background()

	t.Run("the answer is lost after the node applied it", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0", KubernetesVersion: "v1.35.0"}})
		nodes[0].LoseNextResponse(talossim.RPCApplyConfig)
		c := e.dial(t, nodes[0])

		before, err := c.MachineConfig(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		cfg := patchConfig(t, before, kubeletPatch)

		_, err = c.ApplyConfiguration(ctx, cfg, talos.ApplyModeNoReboot, false)
		g.Expect(err).To(MatchError(talos.ErrApplyInterrupted))
		g.Expect(err).To(MatchError(talos.ErrUnreachable))
		g.Expect(c.MachineConfig(ctx)).To(Equal(cfg), "reading back tells it was applied")
	})

	t.Run("the node does not answer", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}}, talos.WithTimeout(300*time.Millisecond))
		nodes[0].InjectFault(talossim.Faults{HangRPCs: []string{talossim.RPCApplyConfig}})

		_, err := e.dial(t, nodes[0]).ApplyConfiguration(ctx, []byte("version: v1alpha1\n"), talos.ApplyModeAuto, false)
		g.Expect(err).To(MatchError(talos.ErrDeadlineExceeded))
		g.Expect(err).To(MatchError(talos.ErrApplyInterrupted))
	})

	t.Run("reading the configuration times out", func(t *testing.T) {
		g := NewWithT(t)
		e, nodes := newEnv(t, []talossim.NodeConfig{{Name: "w-1", Version: "v1.13.0"}}, talos.WithTimeout(300*time.Millisecond))
		nodes[0].InjectFault(talossim.Faults{HangRPCs: []string{talossim.RPCResourceGet}})

		_, err := e.dial(t, nodes[0]).MachineConfig(ctx)
		g.Expect(err).To(MatchError(talos.ErrDeadlineExceeded))
	})
}
