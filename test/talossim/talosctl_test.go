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
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestTalosctl proves that the simulator speaks the Talos API the way
// talosctl, its reference client, expects. It runs only when TALOSCTL names
// a talosctl binary (make test-talosctl builds one with hack/talosctl.sh).
func TestTalosctl(t *testing.T) {
	talosctl := os.Getenv("TALOSCTL")
	if talosctl == "" {
		t.Skip("TALOSCTL is not set; run make test-talosctl")
	}

	g := NewWithT(t)

	sim, err := talossim.New(talossim.Options{RebootDuration: time.Second, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sim.Close() })

	const schematic = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

	add := func(name, version string) *talossim.Node {
		n, err := sim.AddNode(talossim.NodeConfig{Name: name, Version: version, ControlPlane: true, Schematic: schematic})
		g.Expect(err).NotTo(HaveOccurred())

		return n
	}

	nodes := map[string]*talossim.Node{
		"new-nowait": add("new-nowait", "v1.13.0"),
		"new-wait":   add("new-wait", "v1.13.0"),
		"old-nowait": add("old-nowait", "v1.12.4"),
		"old-wait":   add("old-wait", "v1.12.4"),
	}

	configured, err := sim.AddNode(talossim.NodeConfig{Name: "configured", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())

	talosconfig, err := sim.TalosConfig("talossim")
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	configPath := filepath.Join(dir, "talosconfig")
	g.Expect(os.WriteFile(configPath, talosconfig, 0o600)).To(Succeed())

	talosctlRun := func(n *talossim.Node, args ...string) (string, error) {
		t.Helper()

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		full := append([]string{"--talosconfig", configPath, "--endpoints", n.Address(), "--nodes", n.Address()}, args...)
		cmd := exec.CommandContext(ctx, talosctl, full...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "NO_COLOR=1")

		out, err := cmd.CombinedOutput()
		t.Logf("talosctl %v:\n%s", args, out)

		return string(out), err
	}

	run := func(n *talossim.Node, args ...string) string {
		t.Helper()

		out, err := talosctlRun(n, args...)
		g.Expect(err).NotTo(HaveOccurred(), "talosctl %v failed:\n%s", args, out)

		return out
	}

	// configFile writes the configuration of n with a patch applied.
	configFile := func(n *talossim.Node, patch string) (string, []byte) {
		t.Helper()

		current, err := n.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())

		data := patched(t, current, patch)
		path := filepath.Join(dir, "config.yaml")
		g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())

		return path, data
	}

	t.Run("version", func(t *testing.T) {
		g := NewWithT(t)
		out := run(nodes["new-nowait"], "version")
		g.Expect(out).To(And(ContainSubstring("Server:"), ContainSubstring("Tag:         v1.13.0")))
	})

	t.Run("get extensions", func(t *testing.T) {
		g := NewWithT(t)
		out := run(nodes["new-nowait"], "get", "extensions")
		g.Expect(out).To(And(ContainSubstring("schematic"), ContainSubstring(schematic)))
	})

	t.Run("get machinestatus", func(t *testing.T) {
		g := NewWithT(t)
		out := run(nodes["new-nowait"], "get", "machinestatus", "-o", "yaml")
		g.Expect(out).To(And(ContainSubstring("id: machine"), ContainSubstring("stage: running"), ContainSubstring("ready: true")))
	})

	t.Run("get machineconfig", func(t *testing.T) {
		g := NewWithT(t)
		out := run(configured, "get", "machineconfig", "v1alpha1", "-o", "yaml")
		g.Expect(out).To(And(ContainSubstring("id: v1alpha1"), ContainSubstring("type: controlplane"), ContainSubstring("kubelet:v1.35.0")))
	})

	t.Run("apply-config --mode no-reboot", func(t *testing.T) {
		g := NewWithT(t)
		path, data := configFile(configured, patchKubelet)

		out := run(configured, "apply-config", "--file", path, "--mode", "no-reboot")
		g.Expect(out).To(ContainSubstring("Applied configuration without a reboot"))
		g.Expect(configured.MachineConfig()).To(Equal(data))
		g.Expect(configured.ApplyModes()).To(Equal([]string{"NO_REBOOT"}))
	})

	t.Run("apply-config --mode no-reboot refuses a change that needs a reboot", func(t *testing.T) {
		g := NewWithT(t)
		before, err := configured.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())
		path, _ := configFile(configured, patchFiles)

		out, err := talosctlRun(configured, "apply-config", "--file", path, "--mode", "no-reboot")
		g.Expect(err).To(HaveOccurred())
		g.Expect(out).To(ContainSubstring("this config change can't be applied in immediate mode"))
		g.Expect(configured.MachineConfig()).To(Equal(before))
	})

	t.Run("apply-config --dry-run", func(t *testing.T) {
		g := NewWithT(t)
		before, err := configured.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())
		path, _ := configFile(configured, patchFiles)

		out := run(configured, "apply-config", "--file", path, "--mode", "auto", "--dry-run")
		g.Expect(out).To(And(ContainSubstring("Dry run summary"), ContainSubstring("Applied configuration with a reboot (skipped in dry-run)"), ContainSubstring("/var/etc/tollgate")))
		g.Expect(configured.MachineConfig()).To(Equal(before))
	})

	t.Run("patch machineconfig --mode staged", func(t *testing.T) {
		g := NewWithT(t)
		before, err := configured.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())

		out := run(configured, "patch", "machineconfig", "--patch", patchFiles, "--mode", "staged")
		g.Expect(out).To(ContainSubstring("Staged configuration to be applied after the next reboot"))
		g.Expect(configured.MachineConfig()).To(Equal(before))
		g.Expect(configured.PersistentMachineConfig()).To(ContainSubstring("/var/etc/tollgate"))
	})

	upgrade := func(t *testing.T, key, image string, wait bool, wantRPC string) {
		t.Helper()
		g := NewWithT(t)
		n := nodes[key]
		bootID := n.BootID()

		args := []string{"upgrade", "--image", image, "--drain=false"}
		if wait {
			args = append(args, "--wait", "--timeout", "1m")
		} else {
			args = append(args, "--wait=false")
		}

		run(n, args...)

		if wait {
			// --wait returns once the node is back with a new boot ID.
			g.Expect(n.BootID()).NotTo(Equal(bootID))
		}

		g.Eventually(n.Version, 30*time.Second, 50*time.Millisecond).Should(Equal("v1.13.1"))
		g.Eventually(n.BootID, 30*time.Second, 50*time.Millisecond).ShouldNot(Equal(bootID))
		g.Expect(sim.Calls(n.Name(), wantRPC)).To(Equal(1))
	}

	image := "ghcr.io/siderolabs/installer:v1.13.1"

	t.Run("upgrade 1.13 node", func(t *testing.T) {
		upgrade(t, "new-nowait", image, false, talossim.RPCUpgrade)
		NewWithT(t).Expect(sim.Calls("new-nowait", talossim.RPCReboot)).To(Equal(1))
	})
	t.Run("upgrade 1.13 node --wait", func(t *testing.T) {
		upgrade(t, "new-wait", image, true, talossim.RPCUpgrade)
	})
	t.Run("upgrade 1.12 node", func(t *testing.T) {
		upgrade(t, "old-nowait", image, false, talossim.RPCLegacyUpgrade)
	})
	t.Run("upgrade 1.12 node --wait", func(t *testing.T) {
		upgrade(t, "old-wait", image, true, talossim.RPCLegacyUpgrade)
	})
}
