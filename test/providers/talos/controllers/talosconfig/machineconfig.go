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

package talosconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

// errBadGenerateType is returned for a generateType the generator does not
// know.
var errBadGenerateType = errors.New("unknown generateType")

// machineConfigInput is what a machine configuration is generated from.
type machineConfigInput struct {
	// spec is the TalosConfig's spec.
	spec bootstrapv1.TalosConfigSpec
	// clusterName is the name of the Cluster, the Talos cluster name.
	clusterName string
	// endpoint is the Cluster's spec.controlPlaneEndpoint.
	endpoint clusterv1.APIEndpoint
	// kubernetesVersion is the Machine's spec.version (with or without v).
	kubernetesVersion string
	// bundle is the Cluster's secrets bundle, shared by all its machines.
	bundle *secrets.Bundle
}

// versionContract is the Talos config contract of talosVersion, the
// current one when empty.
func versionContract(talosVersion string) (*config.VersionContract, error) {
	if talosVersion == "" {
		return config.TalosVersionCurrent, nil
	}

	contract, err := config.ParseContractFromVersion(talosVersion)
	if err != nil {
		return nil, fmt.Errorf("talosVersion %q is not a Talos version: %w", talosVersion, err)
	}

	return contract, nil
}

// newBundle generates the secrets bundle of a Cluster, for the contract of
// talosVersion.
func newBundle(talosVersion string) (*secrets.Bundle, error) {
	contract, err := versionContract(talosVersion)
	if err != nil {
		return nil, err
	}

	bundle, err := secrets.NewBundle(secrets.NewClock(), contract)
	if err != nil {
		return nil, fmt.Errorf("generating the secrets bundle: %w", err)
	}

	return bundle, nil
}

// marshalBundle and unmarshalBundle store a secrets bundle in a Secret.
func marshalBundle(bundle *secrets.Bundle) ([]byte, error) {
	return json.Marshal(bundle)
}

func unmarshalBundle(data []byte) (*secrets.Bundle, error) {
	bundle := &secrets.Bundle{}
	if err := json.Unmarshal(data, bundle); err != nil {
		return nil, fmt.Errorf("the secrets bundle is not valid JSON: %w", err)
	}

	bundle.Clock = secrets.NewClock()
	if err := bundle.Validate(); err != nil {
		return nil, fmt.Errorf("the secrets bundle is invalid: %w", err)
	}

	return bundle, nil
}

// machineType is the Talos machine type of a generateType.
func machineType(generateType string) (machine.Type, error) {
	switch generateType {
	case bootstrapv1.GenerateTypeInit:
		return machine.TypeInit, nil
	case bootstrapv1.GenerateTypeControlPlane:
		return machine.TypeControlPlane, nil
	case bootstrapv1.GenerateTypeWorker:
		return machine.TypeWorker, nil
	default:
		return machine.TypeUnknown, fmt.Errorf("%w %q: want init, controlplane, worker or none", errBadGenerateType, generateType)
	}
}

// generateMachineConfig returns the Talos machine configuration of in: the
// configuration of its generateType for its Cluster, with its patches, or
// spec.data unchanged for generateType none.
func generateMachineConfig(in machineConfigInput) ([]byte, error) {
	if in.spec.GenerateType == bootstrapv1.GenerateTypeNone {
		if in.spec.Data == "" {
			return nil, errors.New("generateType none needs spec.data")
		}

		return []byte(in.spec.Data), nil
	}

	kind, err := machineType(in.spec.GenerateType)
	if err != nil {
		return nil, err
	}

	contract, err := versionContract(in.spec.TalosVersion)
	if err != nil {
		return nil, err
	}

	endpoint := "https://" + net.JoinHostPort(in.endpoint.Host, strconv.Itoa(int(in.endpoint.Port)))

	input, err := generate.NewInput(in.clusterName, endpoint, strings.TrimPrefix(in.kubernetesVersion, "v"),
		generate.WithVersionContract(contract),
		generate.WithSecretsBundle(in.bundle),
	)
	if err != nil {
		return nil, fmt.Errorf("preparing the %s configuration: %w", in.spec.GenerateType, err)
	}

	cfg, err := input.Config(kind)
	if err != nil {
		return nil, fmt.Errorf("generating the %s configuration: %w", in.spec.GenerateType, err)
	}

	patches, err := loadPatches(in.spec)
	if err != nil {
		return nil, err
	}

	out, err := configpatcher.Apply(configpatcher.WithConfig(cfg), patches)
	if err != nil {
		return nil, fmt.Errorf("applying the config patches: %w", err)
	}

	patched, err := out.Config()
	if err != nil {
		return nil, fmt.Errorf("reading the patched configuration: %w", err)
	}

	data, err := patched.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration: %w", err)
	}

	return data, nil
}

// loadPatches turns spec.configPatches (one JSON patch) and
// spec.strategicPatches into configpatcher patches, in that order.
func loadPatches(spec bootstrapv1.TalosConfigSpec) ([]configpatcher.Patch, error) {
	var raw []string

	if len(spec.ConfigPatches) > 0 {
		ops, err := json.Marshal(spec.ConfigPatches)
		if err != nil {
			return nil, fmt.Errorf("encoding configPatches: %w", err)
		}

		raw = append(raw, string(ops))
	}

	raw = append(raw, spec.StrategicPatches...)

	patches, err := configpatcher.LoadPatches(raw)
	if err != nil {
		return nil, fmt.Errorf("reading the config patches: %w", err)
	}

	return patches, nil
}
