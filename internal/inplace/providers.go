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

package inplace

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosimage"
)

// infrastructureGroup is the API group of CAPI infrastructure providers.
const infrastructureGroup = talosimage.InfrastructureGroup

// ImageField is a field of an InfraMachine that names the image its machine
// boots (talosimage.Kinds). Its change is claimed as it is written: which
// Talos the new image boots (talosimage), whether the Cluster's policy
// installs it and whether the provider admits the change of an existing
// InfraMachine are judged on the whole request (judge), not on the field.
func ImageField(path ...string) Field {
	return Field{Path: path}
}

// KubeletVersion is the Kubernetes version of a worker Machine (Machine
// spec.version): Tollgate moves its node's kubelet to it in place, one minor
// at a time and never down, once every kube-apiserver of the Cluster runs
// it. Another change (a downgrade, a skip of a minor, its removal), and the
// version of a control-plane Machine, are left to CAPI. Nothing of the
// InfraMachine changes with it, so it is claimed with every provider.
func KubeletVersion(path ...string) Field {
	return Field{Path: path, Check: checkKubeletVersion, KubernetesVersion: kubernetesVersion, WorkersOnly: true}
}

func checkKubeletVersion(current, desired any) error {
	want, err := kubernetesVersion(desired)
	if err != nil {
		return err
	}

	have, err := kubernetesVersion(current)
	if err != nil {
		return fmt.Errorf("the current version: %w", err)
	}

	return talos.CheckKubernetesStep(have, want, false)
}

func kubernetesVersion(value any) (string, error) {
	v, ok := value.(string)
	if !ok || v == "" {
		return "", fmt.Errorf("want a Kubernetes version, got %T %v", value, value)
	}

	return talos.CanonicalVersion(v)
}

// DefaultClaims are the changes Tollgate makes in place:
//
//   - the Kubernetes version of a worker Machine (spec.version), its
//     kubelet's, with every infrastructure provider;
//   - the image field of every InfraMachine kind talosimage knows (the
//     real providers Talos users run and Tollgate's test provider), whose
//     Talos version the image names or its template declares.
//
// The Talos bootstrap provider's configs are not claimed: it refuses any
// change of a TalosConfig's spec, which CAPI writes before it calls
// UpdateMachine.
func DefaultClaims() Claims {
	infra := map[schema.GroupKind][]Field{}

	for _, k := range talosimage.Kinds {
		gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}
		for _, f := range k.Fields {
			infra[gk] = append(infra[gk], ImageField(f...))
		}
	}

	return Claims{
		Machine:        []Field{KubeletVersion("version")},
		Infrastructure: infra,
	}
}
