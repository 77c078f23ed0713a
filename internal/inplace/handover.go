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
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosimage"
)

// Handover is a Machine CAPI has handed over for an in-place update, as the
// apiserver says: what its node is to run.
type Handover struct {
	// Image is the image the Machine's InfraMachine names now, as written
	// (an installer, a URL, an image ID); "" when its kind's image field is
	// not known.
	Image string
	// Field is the path of the image field in the object read (for example
	// "spec.template.spec.ami" of a template); "" when its kind's image
	// field is not known.
	Field string
	// Version is the Talos version the node is to run: the one Image boots
	// (or its template declares), or, for an image whose version cannot be
	// read, the one the node runs (the update changes no image then: the
	// extension claims no change of an image it cannot read).
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
// InfraMachine carries the update-in-progress annotation too, and names an
// image the policy's installer installs (an image from elsewhere is never
// installed, however CAPI came to ask for it). It returns nil when m is not
// handed over, and an error naming the object when what CAPI wrote cannot
// be read or is not an image Tollgate installs.
func (c Claims) ReadHandover(ctx context.Context, reader client.Client, m *clusterv1.Machine, installer upgradev1.InstallerSpec) (*Handover, error) {
	if !Marked(m) {
		return nil, nil
	}
	infra, err := readInfraMachine(ctx, reader, m)
	if err != nil {
		return nil, err
	}
	if _, ok := infra.GetAnnotations()[clusterv1.UpdateInProgressAnnotation]; !ok {
		return nil, nil // CAPI has yet to write the desired InfraMachine.
	}
	declared, err := declaredVersion(ctx, reader, infra)
	if err != nil {
		return nil, err
	}
	return c.handover(infra, declared, m, installer)
}

// handover returns what infra, the InfraMachine of m CAPI wrote for an
// in-place update, asks for, declared being the version its template
// declares, and refuses an image installer would not install.
func (c Claims) handover(infra *unstructured.Unstructured, declared string, m *clusterv1.Machine, installer upgradev1.InstallerSpec) (*Handover, error) {
	h := &Handover{}
	img, err := talosimage.Read(infra.Object, declared)
	switch {
	case err == nil:
		if err := checkInstallable(installer, img); err != nil {
			return nil, fmt.Errorf("%s %s of Machine %s: %w", infra.GetKind(), infra.GetName(), klog.KObj(m), err)
		}
		h.Image, h.Version = img.Value, img.Version
	case errors.Is(err, talosimage.ErrNoVersion) || errors.Is(err, talosimage.ErrUnknownKind):
		// An image Tollgate cannot read was not changed (the extension
		// claims no such change): the node keeps the Talos it runs.
		if h.Version = plan.MachineTalosVersion(m); h.Version == "" {
			return nil, fmt.Errorf("%s %s of Machine %s: %w, and the Machine's node reports none yet", infra.GetKind(), infra.GetName(), klog.KObj(m), err)
		}
	default:
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

// TemplateDesired returns what the Machines an InfraMachine template (as a
// JSON map, with its metadata) makes boot: the Talos version its image names
// or the template declares (talosimage.ReadTemplate); an error when neither
// tells it.
func (c Claims) TemplateDesired(template map[string]any) (*Handover, error) {
	img, err := talosimage.ReadTemplate(template)
	if err != nil {
		return nil, err
	}
	return &Handover{Image: img.Value, Field: img.Field, Version: img.Version}, nil
}

// declaredVersion returns the Talos version the template an InfraMachine
// was cloned from declares (talosimage.VersionAnnotation), "" when the
// InfraMachine names no template or the template is gone.
func declaredVersion(ctx context.Context, reader client.Client, infra *unstructured.Unstructured) (string, error) {
	name := infra.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation]
	groupKind := infra.GetAnnotations()[clusterv1.TemplateClonedFromGroupKindAnnotation]
	if name == "" || groupKind == "" {
		return "", nil
	}
	template, err := readObject(ctx, reader, schema.ParseGroupKind(groupKind), infra.GetNamespace(), name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s %s, the template of %s %s: %w", groupKind, name, infra.GetKind(), infra.GetName(), err)
	}
	return talosimage.Declared(template.Object), nil
}

// readInfraMachine reads the InfraMachine of m, at the version the
// apiserver prefers for its group and kind.
func readInfraMachine(ctx context.Context, c client.Client, m *clusterv1.Machine) (*unstructured.Unstructured, error) {
	ref := m.Spec.InfrastructureRef
	infra, err := readObject(ctx, c, schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind}, m.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s of Machine %s: %w", ref.Kind, ref.Name, klog.KObj(m), err)
	}
	return infra, nil
}

// readObject reads an object of gk, at the version the apiserver prefers.
func readObject(ctx context.Context, c client.Client, gk schema.GroupKind, namespace, name string) (*unstructured.Unstructured, error) {
	mapping, err := c.RESTMapper().RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("finding the API of %s: %w", gk, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkInstallable refuses an image whose Talos version the policy's
// installer would not install as the image asks:
//
//   - an installer image must be the policy's installer for its version
//     (CheckInstaller): an image from outside the policy's repository is
//     never installed;
//   - another image (an Image Factory URL, a name, a declared version) is
//     installed with the policy's installer for its version, which must be
//     one; an Image Factory schematic it names must be the one the
//     installer installs (a factory installer whose schematicID is it or
//     unset, each node keeping its own; another installer only for the
//     default schematic).
func checkInstallable(spec upgradev1.InstallerSpec, img talosimage.Image) error {
	if img.Source == talosimage.SourceInstaller {
		return CheckInstaller(spec, img.Installer)
	}
	schematic := img.Schematic
	switch {
	case schematic == "":
	case spec.Source == upgradev1.InstallerSourceFactory && (spec.SchematicID == "" || spec.SchematicID == schematic):
	case spec.Source != upgradev1.InstallerSourceFactory && schematic == talos.DefaultSchematicID:
		schematic = ""
	default:
		return fmt.Errorf("the image boots Image Factory schematic %s, which the policy's installer (%s) does not install: use an image of its schematic, or change spec.installer", schematic, installerName(spec))
	}
	if _, err := talos.InstallerImage(spec, img.Version, schematic); err != nil {
		return fmt.Errorf("the policy's installer cannot install %s: %w", img.Version, err)
	}
	return nil
}

// installerName names an installer spec for a message.
func installerName(spec upgradev1.InstallerSpec) string {
	switch spec.Source {
	case upgradev1.InstallerSourceFactory:
		if spec.SchematicID != "" {
			return "the Image Factory, schematic " + spec.SchematicID
		}
		return "the Image Factory"
	case upgradev1.InstallerSourceImage:
		return spec.Repository
	}
	return string(spec.Source)
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
