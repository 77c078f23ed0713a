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
)

// infrastructureGroup is the API group of CAPI infrastructure providers.
const infrastructureGroup = "infrastructure.cluster.x-k8s.io"

// TalosImage is a field that holds the Talos installer or OS image a
// machine boots, as a cloud image would: Tollgate installs it in place when
// its tag is a Talos version (talos.InstallerVersion); another value, or
// its removal, is left to CAPI.
func TalosImage(path ...string) Field {
	return Field{Path: path, Check: checkTalosImage, TalosVersion: imageVersion}
}

func checkTalosImage(_, desired any) error {
	_, err := imageVersion(desired)
	return err
}

// KubeletVersion is the Kubernetes version of a worker Machine (Machine
// spec.version): Tollgate moves its node's kubelet to it in place, one minor
// at a time and never down, once every kube-apiserver of the Cluster runs
// it. Another change (a downgrade, a skip of a minor, its removal), and the
// version of a control-plane Machine, are left to CAPI.
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

func imageVersion(value any) (string, error) {
	ref, ok := value.(string)
	if !ok {
		return "", fmt.Errorf("want an installer image, got %T %v", value, value)
	}
	return talos.InstallerVersion(ref)
}

// DefaultClaims are the changes Tollgate makes in place with the providers
// it supports:
//
//   - the Kubernetes version of a worker Machine (spec.version), its
//     kubelet's;
//   - the Talos image of the Talos-simulator infrastructure provider of
//     Tollgate's tests (TalosSimMachine spec.image), the shape of a cloud
//     provider whose machines boot an image.
//
// The Talos bootstrap provider's configs are not claimed: it refuses any
// change of a TalosConfig's spec, which CAPI writes before it calls
// UpdateMachine.
func DefaultClaims() Claims {
	return Claims{
		Machine: []Field{KubeletVersion("version")},
		Infrastructure: map[schema.GroupKind][]Field{
			{Group: infrastructureGroup, Kind: "TalosSimMachine"}: {TalosImage("image")},
		},
	}
}
