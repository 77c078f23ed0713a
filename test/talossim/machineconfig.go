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

package talossim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
)

const (
	// DefaultClusterName is the Talos cluster name of a generated machine
	// configuration when the node names no etcd cluster.
	DefaultClusterName = "talossim"
	// generatedEndpoint is the control-plane endpoint of a generated
	// machine configuration; nothing dials it.
	generatedEndpoint = "https://talossim.invalid:6443"
)

// installedMetal is the validation mode of a running node: installed on
// metal, as machined validates a configuration applied to it.
type installedMetal struct{}

func (installedMetal) String() string        { return "metal" }
func (installedMetal) RequiresInstall() bool { return false }
func (installedMetal) InContainer() bool     { return false }

// bundleEntry is the secrets bundle of one cluster, generated once.
type bundleEntry struct {
	once   sync.Once
	bundle *secrets.Bundle
	err    error
}

// secretBundles are the secrets bundles of the generated configurations,
// by cluster name, shared by every simulator of the process: generating
// one takes up to a second, and a simulator stands for nodes, not for
// secrecy.
var secretBundles = struct {
	mu     sync.Mutex
	byName map[string]*bundleEntry
}{byName: map[string]*bundleEntry{}}

// secretsBundle returns the secrets bundle the nodes of cluster share,
// generated on first use.
func secretsBundle(cluster string) (*secrets.Bundle, error) {
	secretBundles.mu.Lock()
	e := secretBundles.byName[cluster]
	if e == nil {
		e = &bundleEntry{}
		secretBundles.byName[cluster] = e
	}
	secretBundles.mu.Unlock()

	e.once.Do(func() {
		e.bundle, e.err = secrets.NewBundle(secrets.NewClock(), talosconfig.TalosVersionCurrent)
	})

	return e.bundle, e.err
}

// generateConfig makes the machine configuration Talos' generator makes for
// a node of the given role, Talos version and Kubernetes version in
// cluster, its machine.kubelet.image in kubeletRepository when it is not ""
// (a mirror), and loads it back as a node would.
func generateConfig(bundle *secrets.Bundle, cluster, talosVersion, kubernetesVersion, kubeletRepository string, controlPlane bool) (talosconfig.Provider, error) {
	contract, err := talosconfig.ParseContractFromVersion(talosVersion)
	if err != nil {
		return nil, fmt.Errorf("reading the config contract of Talos %q: %w", talosVersion, err)
	}

	if kubernetesVersion == "" {
		kubernetesVersion = constants.DefaultKubernetesVersion
	}

	input, err := generate.NewInput(cluster, generatedEndpoint, strings.TrimPrefix(kubernetesVersion, "v"),
		generate.WithVersionContract(contract),
		generate.WithSecretsBundle(bundle),
	)
	if err != nil {
		return nil, fmt.Errorf("preparing the machine configuration: %w", err)
	}

	kind := machine.TypeWorker
	if controlPlane {
		kind = machine.TypeControlPlane
	}

	cfg, err := input.Config(kind)
	if err != nil {
		return nil, fmt.Errorf("generating the %s machine configuration: %w", kind, err)
	}

	if kubeletRepository != "" {
		cfg, err = cfg.PatchV1Alpha1(func(c *v1alpha1.Config) error {
			if c.MachineConfig.MachineKubelet == nil {
				c.MachineConfig.MachineKubelet = &v1alpha1.KubeletConfig{}
			}

			c.MachineConfig.MachineKubelet.KubeletImage = kubeletRepository + ":v" + strings.TrimPrefix(kubernetesVersion, "v")

			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("setting the kubelet image of the %s machine configuration: %w", kind, err)
		}
	}

	data, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, fmt.Errorf("encoding the machine configuration: %w", err)
	}

	return configloader.NewFromBytes(data)
}

// loadConfig parses and validates a machine configuration as machined does
// when it is applied to a running node; the errors are Talos' own.
func loadConfig(data []byte) (talosconfig.Provider, []string, error) {
	cfg, err := configloader.NewFromBytes(data)
	if err != nil {
		return nil, nil, err
	}

	if cfg.RawV1Alpha1() == nil {
		return nil, nil, errors.New("the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?")
	}

	warnings, err := cfg.Validate(installedMetal{})
	if err != nil {
		return nil, nil, err
	}

	// The runtime validation reads the node's disks only for a node that
	// still has to be installed, and checks the Kubernetes image tags.
	runtimeWarnings, err := cfg.RuntimeValidate(context.Background(), nil, installedMetal{})
	if err != nil {
		return nil, nil, err
	}

	return cfg, append(warnings, runtimeWarnings...), nil
}

// checkRole refuses a configuration of another machine type than the
// node's role.
func checkRole(cfg talosconfig.Provider, controlPlane bool) error {
	if cfg.Machine().Type().IsControlPlane() != controlPlane {
		return fmt.Errorf("the machine configuration is of type %s, the node is %s", cfg.Machine().Type(), roleName(controlPlane))
	}

	return nil
}

func roleName(controlPlane bool) string {
	if controlPlane {
		return "a control-plane node"
	}

	return "a worker"
}

// ensureConfig gives the node its generated configuration if it has none
// yet: nodes whose configuration nobody reads cost nothing.
func (n *Node) ensureConfig() error {
	n.mu.Lock()
	has := n.active != nil
	cluster, version, kubernetes, kubeletRepository := n.clusterName, n.version, n.kubernetesVersion, n.kubeletRepository
	n.mu.Unlock()

	if has {
		return nil
	}

	bundle, err := secretsBundle(cluster)
	if err != nil {
		return fmt.Errorf("generating the secrets of cluster %q: %w", cluster, err)
	}

	cfg, err := generateConfig(bundle, cluster, version, kubernetes, kubeletRepository, n.controlPlane)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	if n.active == nil {
		n.active, n.persistent = cfg, cfg
		n.kubelet = settledKubelet(cfg, n.controlPlane, n.faults)
		n.publishConfigLocked()
	}

	return nil
}

// MachineConfig returns the machine configuration the node runs, as Talos
// serves it in the COSI resource MachineConfig (namespace config, id
// v1alpha1): the bytes last applied, or the generated configuration.
func (n *Node) MachineConfig() ([]byte, error) {
	if err := n.ensureConfig(); err != nil {
		return nil, err
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	return n.active.Bytes()
}

// PersistentMachineConfig returns the machine configuration the node boots
// with next (the MachineConfig resource "persistent"): ahead of
// MachineConfig after a staged apply, behind it during a try.
func (n *Node) PersistentMachineConfig() ([]byte, error) {
	if err := n.ensureConfig(); err != nil {
		return nil, err
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	return n.persistent.Bytes()
}

// ApplyModes are the modes of the configurations applied to the node, in
// order, as machined logs them: "NO_REBOOT", "REBOOT", "STAGED", "TRY", and
// "AUTO(NO_REBOOT)" or "AUTO(REBOOT)" for the mode AUTO picked. Dry runs
// and refused configurations are not in it.
func (n *Node) ApplyModes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return append([]string(nil), n.applyModes...)
}

// publishConfigLocked writes the active and persistent configurations into
// the node's COSI state, as machined's SetConfig does.
func (n *Node) publishConfigLocked() {
	if n.active == nil || n.cosi == nil {
		return
	}

	for id, cfg := range map[resource.ID]talosconfig.Provider{config.ActiveID: n.active, config.PersistentID: n.persistent} {
		if err := setConfigResource(n.cosi, id, cfg); err != nil {
			n.sim.logf("Node %s: publishing the machine configuration %s failed: %v", n.name, id, err)
		}
	}
}

// setConfigResource creates or updates the MachineConfig resource id.
func setConfigResource(st state.State, id resource.ID, cfg talosconfig.Provider) error {
	ctx := context.Background()
	res := config.NewMachineConfigWithID(cfg, id)

	old, err := st.Get(ctx, res.Metadata())
	if state.IsNotFoundError(err) {
		return st.Create(ctx, res)
	}

	if err != nil {
		return err
	}

	res.Metadata().SetVersion(old.Metadata().Version())

	return st.Update(ctx, res)
}
