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

	"github.com/cosi-project/runtime/pkg/safe"
	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	machinetype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Strategic merge patches of a machine configuration, as "talosctl patch
// machineconfig --patch" takes them.
const (
	patchKubelet   = "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.2\n"
	patchAPIServer = "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.35.2\n"
	patchScheduler = "cluster:\n  scheduler:\n    image: registry.k8s.io/kube-scheduler:v1.35.2\n"
	patchFiles     = "machine:\n  files:\n    - path: /var/etc/tollgate\n      content: hello\n      permissions: 0o644\n      op: create\n"
	patchLabels    = "machine:\n  nodeLabels:\n    tollgate.dev/zone: a\n"
	patchInstall   = "machine:\n  install:\n    image: ghcr.io/siderolabs/installer:v1.13.1\n"
	patchEnv       = "machine:\n  env:\n    GRPC_GO_LOG_SEVERITY_LEVEL: info\n"
)

// patched returns cfg with the strategic merge patch applied.
func patched(t *testing.T, cfg []byte, patch string) []byte {
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

// loaded parses a machine configuration.
func loaded(t *testing.T, cfg []byte) talosconfig.Provider {
	t.Helper()

	p, err := configloader.NewFromBytes(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	return p
}

// machineConfig reads node n's configuration as talosctl does: the
// MachineConfig resource over COSI.
func machineConfig(t *testing.T, c *talosclient.Client, id string) []byte {
	t.Helper()
	g := NewWithT(t)

	mc, err := safe.StateGetByID[*config.MachineConfig](context.Background(), c.COSI, id)
	g.Expect(err).NotTo(HaveOccurred())

	data, err := mc.Provider().Bytes()
	g.Expect(err).NotTo(HaveOccurred())

	return data
}

func TestMachineConfigServed(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{})

	cp, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, EtcdCluster: "prod", KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())

	w, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.12.4", EtcdCluster: "prod"})
	g.Expect(err).NotTo(HaveOccurred())

	// A generated configuration for the control plane, of its role and
	// versions, as the node serves it over COSI.
	cpConfig := loaded(t, machineConfig(t, dial(t, sim, cp.Address()), config.ActiveID))
	g.Expect(cpConfig.Machine().Type()).To(Equal(machinetype.TypeControlPlane))
	g.Expect(cpConfig.Cluster().Name()).To(Equal("prod"))
	g.Expect(cpConfig.Machine().Kubelet().Image()).To(HaveSuffix(":v1.35.0"))
	g.Expect(cpConfig.Cluster().APIServer().Image()).To(Equal("registry.k8s.io/kube-apiserver:v1.35.0"))

	// The worker's is generated when first read, with the cluster's
	// secrets: one CA for the whole cluster.
	wData := machineConfig(t, dial(t, sim, w.Address()), config.ActiveID)
	wConfig := loaded(t, wData)
	g.Expect(wConfig.Machine().Type()).To(Equal(machinetype.TypeWorker))
	g.Expect(wConfig.Cluster().IssuingCA().Crt).To(Equal(cpConfig.Cluster().IssuingCA().Crt))
	g.Expect(w.MachineConfig()).To(Equal(wData))
	g.Expect(w.PersistentMachineConfig()).To(Equal(wData))

	// A configuration given to the node is served as given.
	input, err := generate.NewInput("given", "https://given.example:6443", "1.34.1")
	g.Expect(err).NotTo(HaveOccurred())
	gen, err := input.Config(machinetype.TypeWorker)
	g.Expect(err).NotTo(HaveOccurred())
	given, err := gen.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	g.Expect(err).NotTo(HaveOccurred())

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-2", Version: "v1.13.0", MachineConfig: given})
	g.Expect(err).NotTo(HaveOccurred())
	c := dial(t, sim, n.Address())
	g.Expect(machineConfig(t, c, config.ActiveID)).To(Equal(given))
	g.Expect(machineConfig(t, c, config.PersistentID)).To(Equal(given))

	kubelet, err := n.Kubelet()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kubelet).To(Equal(talossim.Kubelet{Version: "v1.34.1"}))

	// A configuration that does not load, or of another role, is refused.
	_, err = sim.AddNode(talossim.NodeConfig{Name: "bad", Version: "v1.13.0", MachineConfig: []byte("version: v1alpha1\nmachine: [")})
	g.Expect(err).To(MatchError(ContainSubstring("the machine configuration of node \"bad\"")))
	_, err = sim.AddNode(talossim.NodeConfig{Name: "cp-bad", Version: "v1.13.0", ControlPlane: true, MachineConfig: given})
	g.Expect(err).To(MatchError(ContainSubstring("the machine configuration is of type worker, the node is a control-plane node")))
}

func TestApplyConfiguration(t *testing.T) {
	type want struct {
		code     codes.Code
		message  string
		mode     machine.ApplyConfigurationRequest_Mode
		details  string
		reboots  bool
		active   bool // the node runs the new configuration at once
		persists bool // the node boots with it
		modes    []string
	}

	tests := []struct {
		name   string
		patch  string
		mode   machine.ApplyConfigurationRequest_Mode
		dryRun bool
		data   []byte // instead of the patched configuration
		want   want
	}{
		{
			name: "no-reboot applies a kubelet image", patch: patchKubelet, mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{mode: machine.ApplyConfigurationRequest_NO_REBOOT, details: "Applied configuration without a reboot", active: true, persists: true, modes: []string{"NO_REBOOT"}},
		},
		{
			name: "no-reboot applies a control-plane image", patch: patchAPIServer, mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{mode: machine.ApplyConfigurationRequest_NO_REBOOT, details: "Applied configuration without a reboot", active: true, persists: true, modes: []string{"NO_REBOOT"}},
		},
		{
			name: "no-reboot applies node labels", patch: patchLabels, mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{mode: machine.ApplyConfigurationRequest_NO_REBOOT, details: "Applied configuration without a reboot", active: true, persists: true, modes: []string{"NO_REBOOT"}},
		},
		{
			name: "no-reboot applies an install image (used at the next upgrade)", patch: patchInstall, mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{mode: machine.ApplyConfigurationRequest_NO_REBOOT, details: "Applied configuration without a reboot", active: true, persists: true, modes: []string{"NO_REBOOT"}},
		},
		{
			name: "no-reboot refuses machine files", patch: patchFiles, mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{code: codes.InvalidArgument, message: "this config change can't be applied in immediate mode\ndiff:\n"},
		},
		{
			name: "try refuses machine env", patch: patchEnv, mode: machine.ApplyConfigurationRequest_TRY,
			want: want{code: codes.InvalidArgument, message: "this config change can't be applied in immediate mode"},
		},
		{
			name: "auto picks no-reboot", patch: patchKubelet, mode: machine.ApplyConfigurationRequest_AUTO,
			want: want{mode: machine.ApplyConfigurationRequest_NO_REBOOT, details: "Applied configuration without a reboot", active: true, persists: true, modes: []string{"AUTO(NO_REBOOT)"}},
		},
		{
			name: "auto picks reboot", patch: patchFiles, mode: machine.ApplyConfigurationRequest_AUTO,
			want: want{mode: machine.ApplyConfigurationRequest_REBOOT, details: "Applied configuration with a reboot: this config change can't be applied in immediate mode", reboots: true, persists: true, modes: []string{"AUTO(REBOOT)"}},
		},
		{
			name: "reboot", patch: patchKubelet, mode: machine.ApplyConfigurationRequest_REBOOT,
			want: want{mode: machine.ApplyConfigurationRequest_REBOOT, details: "Applied configuration with a reboot", reboots: true, persists: true, modes: []string{"REBOOT"}},
		},
		{
			name: "staged", patch: patchFiles, mode: machine.ApplyConfigurationRequest_STAGED,
			want: want{mode: machine.ApplyConfigurationRequest_STAGED, details: "Staged configuration to be applied after the next reboot", persists: true, modes: []string{"STAGED"}},
		},
		{
			name: "dry run", patch: patchFiles, mode: machine.ApplyConfigurationRequest_AUTO, dryRun: true,
			want: want{mode: machine.ApplyConfigurationRequest_REBOOT, details: "Dry run summary:\nApplied configuration with a reboot (skipped in dry-run).\nConfig diff:\n\n"},
		},
		{
			name: "a configuration that does not load", data: []byte("version: v1alpha1\nmachine: ["), mode: machine.ApplyConfigurationRequest_AUTO,
			want: want{code: codes.InvalidArgument, message: "decode error: go-yaml load error"},
		},
		{
			name: "a configuration without v1alpha1", data: []byte("apiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://siderolink.example:8099\n"), mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{code: codes.InvalidArgument, message: "the applied machine configuration doesn't contain v1alpha1 config"},
		},
		{
			name: "a kubelet image without a version", patch: "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:latest\n", mode: machine.ApplyConfigurationRequest_NO_REBOOT,
			want: want{code: codes.InvalidArgument, message: "kubelet image is not valid"},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			sim := newSim(t, talossim.Options{})

			n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
			g.Expect(err).NotTo(HaveOccurred())

			before, err := n.MachineConfig()
			g.Expect(err).NotTo(HaveOccurred())

			data := tt.data
			if data == nil {
				data = patched(t, before, tt.patch)
			}

			bootID := n.BootID()
			resp, err := dial(t, sim, n.Address()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: data, Mode: tt.mode, DryRun: tt.dryRun})
			g.Expect(sim.Calls("cp-1", talossim.RPCApplyConfig)).To(Equal(1))

			if tt.want.code != codes.OK {
				g.Expect(status.Code(err)).To(Equal(tt.want.code))
				g.Expect(status.Convert(err).Message()).To(ContainSubstring(tt.want.message))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(resp.GetMessages()).To(HaveLen(1))
				g.Expect(resp.GetMessages()[0].GetMode()).To(Equal(tt.want.mode))
				g.Expect(resp.GetMessages()[0].GetModeDetails()).To(HavePrefix(tt.want.details))
			}

			if tt.want.reboots {
				g.Eventually(n.BootID, 10*time.Second, 20*time.Millisecond).ShouldNot(Equal(bootID))
				g.Eventually(n.Up, 10*time.Second, 20*time.Millisecond).Should(BeTrue())
				g.Expect(n.RebootModes()).To(Equal([]string{"DEFAULT"}))
				g.Expect(n.MachineConfig()).To(Equal(data))
			} else {
				g.Expect(n.BootID()).To(Equal(bootID))
				g.Expect(n.RebootModes()).To(BeEmpty())
			}

			wantActive, wantPersistent := before, before
			if tt.want.active {
				wantActive = data
			}
			if tt.want.persists {
				wantPersistent = data
			}
			if !tt.want.reboots {
				g.Expect(n.MachineConfig()).To(Equal(wantActive))
			}
			g.Expect(n.PersistentMachineConfig()).To(Equal(wantPersistent))
			g.Expect(n.ApplyModes()).To(Equal(tt.want.modes))
		})
	}
}

// TestStagedConfigAppliesAtBoot stages a configuration that needs a reboot:
// the node keeps running the old one until it reboots, for any reason.
func TestStagedConfigAppliesAtBoot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sim := newSim(t, talossim.Options{})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.13.0", KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())

	before, err := n.MachineConfig()
	g.Expect(err).NotTo(HaveOccurred())
	staged := patched(t, before, patchFiles)

	c := dial(t, sim, n.Address())
	_, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: staged, Mode: machine.ApplyConfigurationRequest_STAGED})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(machineConfig(t, c, config.ActiveID)).To(Equal(before))
	g.Expect(machineConfig(t, c, config.PersistentID)).To(Equal(staged))

	g.Expect(c.Reboot(ctx)).To(Succeed())
	g.Eventually(n.Boots, 10*time.Second, 20*time.Millisecond).Should(Equal(1))

	c = dial(t, sim, n.Address())
	g.Expect(machineConfig(t, c, config.ActiveID)).To(Equal(staged))
	g.Expect(machineConfig(t, c, config.PersistentID)).To(Equal(staged))
}

// TestTryRollsBack applies in try mode: the node runs the configuration
// until the timeout, without persisting it, then the old one again; an
// apply in another mode ends the try.
func TestTryRollsBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sim := newSim(t, talossim.Options{StaticPodStartDelay: 10 * time.Millisecond})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())

	before, err := n.MachineConfig()
	g.Expect(err).NotTo(HaveOccurred())
	tried := patched(t, before, patchKubelet)

	c := dial(t, sim, n.Address())
	try := func() {
		resp, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
			Data: tried, Mode: machine.ApplyConfigurationRequest_TRY, TryModeTimeout: durationpb.New(500 * time.Millisecond),
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.GetMessages()[0].GetModeDetails()).To(Equal(
			"Applied configuration without a reboot\nThe config is applied in 'try' mode and will be automatically reverted back in 500ms"))
	}

	try()
	g.Expect(n.MachineConfig()).To(Equal(tried))
	g.Expect(n.PersistentMachineConfig()).To(Equal(before))
	g.Eventually(kubeletVersion(n), 5*time.Second, 10*time.Millisecond).Should(Equal("v1.35.2"))

	g.Eventually(n.MachineConfig, 5*time.Second, 20*time.Millisecond).Should(Equal(before))
	g.Eventually(kubeletVersion(n), 5*time.Second, 10*time.Millisecond).Should(Equal("v1.35.0"))

	// A no-reboot apply during the try makes it for good.
	try()
	_, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: tried, Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(n.MachineConfig, time.Second, 50*time.Millisecond).Should(Equal(tried))
	g.Expect(n.ApplyModes()).To(Equal([]string{"TRY", "TRY", "NO_REBOOT"}))
}

func kubeletVersion(n *talossim.Node) func() (string, error) {
	return func() (string, error) {
		k, err := n.Kubelet()

		return k.Version, err
	}
}

// TestKubeletFollowsTheConfig follows what the kubelet of a control-plane
// node reports through image changes, a fault and a reboot.
func TestKubeletFollowsTheConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sim := newSim(t, talossim.Options{StaticPodStartDelay: 300 * time.Millisecond})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())

	kubelet := func() talossim.Kubelet {
		k, err := n.Kubelet()
		g.Expect(err).NotTo(HaveOccurred())

		return k
	}
	pod := func(component string) func() talossim.StaticPod {
		return func() talossim.StaticPod {
			for _, p := range kubelet().StaticPods {
				if p.Component == component {
					return p
				}
			}

			return talossim.StaticPod{}
		}
	}

	g.Expect(kubelet()).To(Equal(talossim.Kubelet{
		Version: "v1.35.0",
		StaticPods: []talossim.StaticPod{
			{Component: talossim.ComponentAPIServer, Image: "registry.k8s.io/kube-apiserver:v1.35.0", Ready: true},
			{Component: talossim.ComponentControllerManager, Image: "registry.k8s.io/kube-controller-manager:v1.35.0", Ready: true},
			{Component: talossim.ComponentScheduler, Image: "registry.k8s.io/kube-scheduler:v1.35.0", Ready: true},
		},
		KubeProxyImage: "registry.k8s.io/kube-proxy:v1.35.0",
	}))

	c := dial(t, sim, n.Address())
	apply := func(patch string) {
		cfg, err := n.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())

		_, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: patched(t, cfg, patch), Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
		g.Expect(err).NotTo(HaveOccurred())
	}

	// The apiserver restarts on its new image: NotReady, then Ready; the
	// other static Pods go on.
	apply(patchAPIServer)
	g.Expect(pod(talossim.ComponentAPIServer)()).To(Equal(talossim.StaticPod{Component: talossim.ComponentAPIServer, Image: "registry.k8s.io/kube-apiserver:v1.35.2"}))
	g.Expect(pod(talossim.ComponentScheduler)().Ready).To(BeTrue())
	g.Eventually(pod(talossim.ComponentAPIServer), 5*time.Second, 10*time.Millisecond).Should(HaveField("Ready", BeTrue()))

	// The kubelet reports its new version once it restarted.
	apply(patchKubelet)
	g.Expect(kubelet().Version).To(Equal("v1.35.0"))
	g.Eventually(kubeletVersion(n), 5*time.Second, 10*time.Millisecond).Should(Equal("v1.35.2"))

	// A static Pod that never becomes Ready.
	n.InjectFault(talossim.Faults{StaticPodNeverReady: []string{talossim.ComponentScheduler}})
	apply(patchScheduler)
	g.Consistently(pod(talossim.ComponentScheduler), time.Second, 50*time.Millisecond).Should(
		Equal(talossim.StaticPod{Component: talossim.ComponentScheduler, Image: "registry.k8s.io/kube-scheduler:v1.35.2"}))

	// A boot restarts every static Pod.
	n.InjectFault(talossim.Faults{})
	g.Expect(c.Reboot(ctx)).To(Succeed())
	g.Eventually(n.Boots, 10*time.Second, 20*time.Millisecond).Should(Equal(1))
	g.Eventually(func() []talossim.StaticPod { return kubelet().StaticPods }, 5*time.Second, 10*time.Millisecond).Should(HaveEach(HaveField("Ready", BeTrue())))
	g.Expect(pod(talossim.ComponentScheduler)().Image).To(Equal("registry.k8s.io/kube-scheduler:v1.35.2"))
	g.Expect(kubelet().Version).To(Equal("v1.35.2"))
}

// TestApplyConfigurationNewCAs applies new cluster and machine CAs without
// a reboot: Talos 1.13 allows it (CanApplyImmediate copies .cluster and
// .machine.ca), whatever it does to a running cluster.
func TestApplyConfigurationNewCAs(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())

	before, err := n.MachineConfig()
	g.Expect(err).NotTo(HaveOccurred())

	input, err := generate.NewInput("other", "https://other.example:6443", "1.35.0")
	g.Expect(err).NotTo(HaveOccurred())
	other, err := input.Config(machinetype.TypeControlPlane)
	g.Expect(err).NotTo(HaveOccurred())

	next, err := loaded(t, before).PatchV1Alpha1(func(c *v1alpha1.Config) error {
		c.ClusterConfig.ClusterCA = other.RawV1Alpha1().ClusterConfig.ClusterCA
		c.MachineConfig.MachineCA = other.RawV1Alpha1().MachineConfig.MachineCA

		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	data, err := next.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	g.Expect(err).NotTo(HaveOccurred())

	resp, err := dial(t, sim, n.Address()).ApplyConfiguration(context.Background(), &machine.ApplyConfigurationRequest{Data: data, Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.GetMessages()[0].GetMode()).To(Equal(machine.ApplyConfigurationRequest_NO_REBOOT))

	applied, err := n.MachineConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loaded(t, applied).Cluster().IssuingCA().Crt).To(Equal(other.Cluster().IssuingCA().Crt))
}

// TestKubeletFromAMirror: a node generated with a kubelet repository names
// it in machine.kubelet.image, and its kubelet reports the version of the
// image's tag.
func TestKubeletFromAMirror(t *testing.T) {
	g := NewWithT(t)
	sim := newSim(t, talossim.Options{})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.11.5", KubernetesVersion: "v1.34.1", KubeletRepository: "127.0.0.1:5000/siderolabs/kubelet"})
	g.Expect(err).NotTo(HaveOccurred())

	data, err := n.MachineConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := configloader.NewFromBytes(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Machine().Kubelet().Image()).To(Equal("127.0.0.1:5000/siderolabs/kubelet:v1.34.1"))
	g.Expect(n.Kubelet()).To(HaveField("Version", "v1.34.1"))
}
