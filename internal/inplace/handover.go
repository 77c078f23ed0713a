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
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// Handover is a Machine CAPI has handed over for an in-place update, as the
// apiserver says: what its node is to run.
type Handover struct {
	// Image is the Talos image the Machine's InfraMachine names now.
	Image string
	// Version is the Talos version Image installs.
	Version string
	// KubernetesVersion is the Kubernetes version the Machine asks its
	// node's kubelet to run, in a claimed field of a worker Machine; ""
	// when none.
	KubernetesVersion string
}

// Marked reports whether CAPI marked m for an in-place update and asks the
// extension to perform it: the update-in-progress annotation and the
// pending UpdateMachine hook, which CAPI's MachineSet controller sets once
// it has written the desired InfraMachine and BootstrapConfig.
func Marked(m client.Object) bool {
	_, inProgress := m.GetAnnotations()[clusterv1.UpdateInProgressAnnotation]
	return inProgress && slices.Contains(pendingHooks(m), runtimecatalog.HookName(runtimehooksv1.UpdateMachine))
}

func pendingHooks(obj client.Object) []string {
	v := obj.GetAnnotations()[runtimev1.PendingHooksAnnotation]
	if v == "" {
		return nil
	}
	hooks := strings.Split(v, ",")
	for i := range hooks {
		hooks[i] = strings.TrimSpace(hooks[i])
	}
	return hooks
}

// ReadHandover reads, through reader (live, not a cache: a decision to
// upgrade a node is made on what the apiserver says now), whether CAPI has
// handed m over for an in-place update Tollgate makes: m is Marked, its
// InfraMachine carries the update-in-progress annotation too, and names, in
// a field Tollgate claims, a Talos image of installer (the policy's: an image
// from elsewhere is never installed, however CAPI came to ask for it). It
// returns nil when m is not handed over, and an error naming the object when
// what CAPI wrote cannot be read or is not an image Tollgate installs.
func (c Claims) ReadHandover(ctx context.Context, reader client.Client, m *clusterv1.Machine, installer upgradev1.InstallerSpec) (*Handover, error) {
	if !Marked(m) {
		return nil, nil
	}
	infra, err := readInfraMachine(ctx, reader, m)
	if err != nil {
		return nil, err
	}
	return c.handover(infra, m, installer)
}

// handover returns what infra, the InfraMachine of m, asks for once CAPI
// has written it for an in-place update (nil before), and refuses an image
// installer would not install.
func (c Claims) handover(infra *unstructured.Unstructured, m *clusterv1.Machine, installer upgradev1.InstallerSpec) (*Handover, error) {
	if _, ok := infra.GetAnnotations()[clusterv1.UpdateInProgressAnnotation]; !ok {
		return nil, nil // CAPI has yet to write the desired InfraMachine.
	}
	h, err := c.Desired(infra.Object)
	if err != nil {
		return nil, err
	}
	if err := CheckInstaller(installer, h.Image); err != nil {
		return nil, fmt.Errorf("%s %s of Machine %s: %w", infra.GetKind(), infra.GetName(), klog.KObj(m), err)
	}
	if h.KubernetesVersion, err = c.kubernetesVersion(m); err != nil {
		return nil, err
	}
	return h, nil
}

// kubernetesVersion returns the Kubernetes version m asks for in the first
// claimed field of a Machine that names one; "" for a control-plane Machine
// (WorkersOnly) and when no such field is set.
func (c Claims) kubernetesVersion(m *clusterv1.Machine) (string, error) {
	var obj map[string]any
	for _, f := range c.Machine {
		if f.KubernetesVersion == nil || (f.WorkersOnly && util.IsControlPlaneMachine(m)) {
			continue
		}
		if obj == nil {
			var err error
			if obj, err = toMap(m); err != nil {
				return "", fmt.Errorf("reading Machine %s: %w", klog.KObj(m), err)
			}
		}
		path := append([]string{"spec"}, f.Path...)
		value, ok := lookup(obj, path)
		if !ok {
			continue
		}
		version, err := f.KubernetesVersion(value)
		if err != nil {
			return "", fmt.Errorf("%s of Machine %s: %w", strings.Join(path, "."), klog.KObj(m), err)
		}
		return version, nil
	}
	return "", nil
}

// Desired returns what an InfraMachine (as a JSON map) asks its node to
// run: the value of the first claimed field that names a Talos version.
func (c Claims) Desired(infra map[string]any) (*Handover, error) {
	return c.talos(infra, false)
}

// TemplateDesired returns what the Machines an InfraMachine template (as a
// JSON map) makes boot, as Desired does for an InfraMachine; an error when
// Tollgate claims no field of its kind that names a Talos version.
func (c Claims) TemplateDesired(template map[string]any) (*Handover, error) {
	return c.talos(template, true)
}

func (c Claims) talos(obj map[string]any, template bool) (*Handover, error) {
	gk, err := groupKind(obj)
	if err != nil {
		return nil, fmt.Errorf("reading the InfraMachine: %w", err)
	}
	fields, base := ForKind(c.Infrastructure, gk, template)
	for _, f := range fields {
		if f.TalosVersion == nil {
			continue
		}
		path := append(append([]string{}, base...), f.Path...)
		value, ok := lookup(obj, path)
		if !ok {
			return nil, fmt.Errorf("%s has no %s", gk.Kind, strings.Join(path, "."))
		}
		version, err := f.TalosVersion(value)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gk.Kind, strings.Join(path, "."), err)
		}
		image, _ := value.(string)
		return &Handover{Image: image, Version: version}, nil
	}
	return nil, fmt.Errorf("tollgate knows no field of %s that names a Talos version", gk)
}

// readInfraMachine reads the InfraMachine of m, at the version the
// apiserver prefers for its group and kind.
func readInfraMachine(ctx context.Context, c client.Client, m *clusterv1.Machine) (*unstructured.Unstructured, error) {
	ref := m.Spec.InfrastructureRef
	mapping, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("finding the API of %s %s of Machine %s: %w", ref.Kind, ref.Name, klog.KObj(m), err)
	}
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, infra); err != nil {
		return nil, fmt.Errorf("reading %s %s of Machine %s: %w", ref.Kind, ref.Name, klog.KObj(m), err)
	}
	return infra, nil
}

// CheckInstaller refuses an image the plan's installer would not install
// for its version: another repository, another platform or secure-boot
// kind, or (for a factory image) another schematic than the plan names.
// An image from outside the policy's repository is never installed, however
// CAPI came to ask for it.
func CheckInstaller(spec upgradev1.InstallerSpec, image string) error {
	version, err := talos.InstallerVersion(image)
	if err != nil {
		return err
	}
	schematic := ""
	if spec.Source == upgradev1.InstallerSourceFactory {
		if tag, err := name.NewTag(image, name.StrictValidation); err == nil {
			schematic = path.Base(tag.RepositoryStr())
		}
	}
	want, err := talos.InstallerImage(spec, version, schematic)
	if err != nil {
		return err
	}
	if !sameImage(want, image) {
		return fmt.Errorf("image %q is not from the policy's installer (it installs %s from %q)", image, version, want)
	}
	return nil
}

// sameImage compares two tagged references by their canonical names
// (docker.io/library defaults and all).
func sameImage(a, b string) bool {
	ta, errA := name.NewTag(a, name.StrictValidation)
	tb, errB := name.NewTag(b, name.StrictValidation)
	return errA == nil && errB == nil && ta.Name() == tb.Name()
}
