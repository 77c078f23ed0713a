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

package kubernetes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/distribution/reference"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// Component is a Kubernetes component whose image a Talos machine
// configuration sets.
type Component string

// The components, named as their static Pods, DaemonSet and service are.
const (
	// ComponentAPIServer is kube-apiserver, a static Pod of every
	// control-plane node (cluster.apiServer.image).
	ComponentAPIServer Component = "kube-apiserver"
	// ComponentControllerManager is kube-controller-manager, a static Pod
	// of every control-plane node (cluster.controllerManager.image).
	ComponentControllerManager Component = "kube-controller-manager"
	// ComponentScheduler is kube-scheduler, a static Pod of every
	// control-plane node (cluster.scheduler.image).
	ComponentScheduler Component = "kube-scheduler"
	// ComponentKubeProxy is kube-proxy, the DaemonSet Talos creates from
	// its bootstrap manifests (cluster.proxy.image of the control-plane
	// nodes).
	ComponentKubeProxy Component = "kube-proxy"
	// ComponentKubelet is the kubelet, a Talos service of every node
	// (machine.kubelet.image).
	ComponentKubelet Component = "kubelet"
)

// staticPodComponents are the control-plane components a control-plane node
// runs as static Pods, in the order Talos renders them.
var staticPodComponents = []Component{ComponentAPIServer, ComponentControllerManager, ComponentScheduler}

// Part is a part of a node-level Kubernetes upgrade: what one step changes.
type Part string

const (
	// PartControlPlane is the control-plane components of one
	// control-plane node: the images of its kube-apiserver,
	// kube-controller-manager and kube-scheduler static Pods, and
	// cluster.proxy.image when kube-proxy is not disabled (which only the
	// bootstrap manifests read: see PartKubeProxy). Talos applies the
	// change without a reboot and restarts the static Pods; the step is
	// done when StaticPodsReady says so.
	PartControlPlane Part = "ControlPlane"
	// PartKubeProxy is the kube-proxy DaemonSet of the workload cluster,
	// which Talos creates once and never updates: UpdateKubeProxy changes
	// its image, and the step is done when KubeProxyRolledOut says so.
	PartKubeProxy Part = "KubeProxy"
	// PartKubelet is the kubelet of one node (machine.kubelet.image).
	// Talos applies the change without a reboot and restarts the kubelet;
	// the step is done when KubeletAt says so of the node's Node.
	PartKubelet Part = "Kubelet"
)

// Typed errors, to be tested with errors.Is. Their messages name fields,
// never values: a machine configuration holds secrets.
var (
	// ErrInvalidConfig is wrapped by the errors about a machine
	// configuration that does not load as a Talos one.
	ErrInvalidConfig = errors.New("invalid Talos machine configuration")
	// ErrInvalidImage is wrapped by the errors about an image field that
	// does not parse as an image reference, or whose tag is not a
	// Kubernetes version.
	ErrInvalidImage = errors.New("invalid Kubernetes image")
	// ErrDigestImage is wrapped by the errors about an image field pinned
	// by digest: a digest names one build, and changing the tag beside it
	// changes nothing that runs.
	ErrDigestImage = errors.New("image pinned by digest")
	// ErrNotControlPlane is wrapped by the error of ImagePatches for the
	// control-plane part of a worker's configuration.
	ErrNotControlPlane = errors.New("not a control-plane machine configuration")
	// ErrInvalidVersion is wrapped by the errors about a target that is
	// not a Kubernetes version.
	ErrInvalidVersion = errors.New("invalid Kubernetes version")
)

// DefaultKubeletRepository is the repository of the kubelet image a Talos
// node runs when its machine configuration sets none.
const DefaultKubeletRepository = constants.KubeletImage

// kubeletVariants are the suffixes of the tags of ghcr.io/siderolabs/kubelet
// that name a variant of the same version, kept when the version changes
// (talosctl upgrade-k8s keeps them too).
var kubeletVariants = []string{"-fat", "-slim"}

// Versions is what a node runs according to its machine configuration: the
// Kubernetes versions of the tags of its images ("v1.35.2"). It is what
// Tollgate reads back from the node after applying a change. A version is
// "" when its image field is unset: the node then runs the default image
// of its Talos version, which its configuration does not say.
type Versions struct {
	// ControlPlane is whether the node is a control-plane node
	// (machine.type controlplane or init).
	ControlPlane bool
	// Kubelet is the version of machine.kubelet.image.
	Kubelet string
	// StaticPods is the version of the image of each control-plane
	// component the node runs as a static Pod: kube-apiserver, and
	// kube-controller-manager and kube-scheduler unless
	// machine.controlPlane disables them. Empty on a worker.
	StaticPods map[Component]string
	// KubeProxy is the version of cluster.proxy.image on a control-plane
	// node whose configuration does not disable kube-proxy, else "". Only
	// Talos' bootstrap manifests read it: what the cluster runs is the
	// kube-proxy DaemonSet's image (KubeProxyRolledOut).
	KubeProxy string
}

// StaticPodComponents returns the components v.StaticPods has, in the order
// Talos renders them: those StaticPodsReady is to check on the node.
func (v Versions) StaticPodComponents() []Component {
	var components []Component

	for _, c := range staticPodComponents {
		if _, ok := v.StaticPods[c]; ok {
			components = append(components, c)
		}
	}

	return components
}

// ImageChange is one image field ImagePatches changes.
type ImageChange struct {
	// Component is the component whose image changes.
	Component Component
	// Field is the field of the machine configuration, such as
	// "cluster.apiServer.image".
	Field string
	// From is the version the field's tag said, "" when it was unset.
	From string
	// To is the version the field's tag says now.
	To string
}

// imageField is one image field of the v1alpha1 document.
type imageField struct {
	component Component
	// path is the field's path in the configuration.
	path string
	// defaultRepository is the repository Talos uses when the field is
	// unset.
	defaultRepository string
	// variants are the tag suffixes kept when the version changes.
	variants []string
	// image points at the field in cfg, creating the sections that lead
	// to it.
	image func(cfg *v1alpha1.Config) *string
}

var (
	apiServerField = imageField{
		component: ComponentAPIServer, path: "cluster.apiServer.image", defaultRepository: constants.KubernetesAPIServerImage,
		image: func(cfg *v1alpha1.Config) *string {
			if cfg.ClusterConfig.APIServerConfig == nil {
				cfg.ClusterConfig.APIServerConfig = &v1alpha1.APIServerConfig{}
			}

			return &cfg.ClusterConfig.APIServerConfig.ContainerImage
		},
	}
	controllerManagerField = imageField{
		component: ComponentControllerManager, path: "cluster.controllerManager.image", defaultRepository: constants.KubernetesControllerManagerImage,
		image: func(cfg *v1alpha1.Config) *string {
			if cfg.ClusterConfig.ControllerManagerConfig == nil {
				cfg.ClusterConfig.ControllerManagerConfig = &v1alpha1.ControllerManagerConfig{}
			}

			return &cfg.ClusterConfig.ControllerManagerConfig.ContainerImage
		},
	}
	schedulerField = imageField{
		component: ComponentScheduler, path: "cluster.scheduler.image", defaultRepository: constants.KubernetesSchedulerImage,
		image: func(cfg *v1alpha1.Config) *string {
			if cfg.ClusterConfig.SchedulerConfig == nil {
				cfg.ClusterConfig.SchedulerConfig = &v1alpha1.SchedulerConfig{}
			}

			return &cfg.ClusterConfig.SchedulerConfig.ContainerImage
		},
	}
	proxyField = imageField{
		component: ComponentKubeProxy, path: "cluster.proxy.image", defaultRepository: constants.KubeProxyImage,
		image: func(cfg *v1alpha1.Config) *string {
			if cfg.ClusterConfig.ProxyConfig == nil {
				cfg.ClusterConfig.ProxyConfig = &v1alpha1.ProxyConfig{}
			}

			return &cfg.ClusterConfig.ProxyConfig.ContainerImage
		},
	}
	kubeletField = imageField{
		component: ComponentKubelet, path: "machine.kubelet.image", defaultRepository: DefaultKubeletRepository, variants: kubeletVariants,
		image: func(cfg *v1alpha1.Config) *string {
			if cfg.MachineConfig.MachineKubelet == nil {
				cfg.MachineConfig.MachineKubelet = &v1alpha1.KubeletConfig{}
			}

			return &cfg.MachineConfig.MachineKubelet.KubeletImage
		},
	}
)

// ImagePatches returns the machine configuration that moves part of a node
// running running to Kubernetes version, and the image fields it changes.
//
// PartControlPlane changes cluster.apiServer.image,
// cluster.controllerManager.image, cluster.scheduler.image and, unless
// kube-proxy is disabled, cluster.proxy.image, of a control-plane node's
// configuration only (ErrNotControlPlane otherwise); PartKubelet changes
// machine.kubelet.image, of any node. Each image keeps its repository (a
// user's mirror stays the mirror) and gets the tag version; a kubelet tag's
// variant suffix ("-fat", "-slim") is kept. An unset field gets Talos'
// default repository (registry.k8s.io/kube-apiserver, ...,
// ghcr.io/siderolabs/kubelet), as talosctl upgrade-k8s sets it. Nothing
// else of the configuration changes: the other documents are kept.
//
// When every field already has the version, ImagePatches returns no
// configuration and no change: there is nothing to apply. The configuration
// it returns is encoded without comments, holds the secrets of running and
// must not be logged. It refuses a configuration that does not load
// (ErrInvalidConfig) and an image field that does not parse or whose tag is
// not a Kubernetes version (ErrInvalidImage) or is pinned by digest
// (ErrDigestImage), naming the field and never its value.
func ImagePatches(running []byte, part Part, version string) ([]byte, []ImageChange, error) {
	target, err := canonicalVersion(version)
	if err != nil {
		return nil, nil, err
	}

	cfg, raw, err := load(running)
	if err != nil {
		return nil, nil, err
	}

	var fields []imageField

	switch part {
	case PartControlPlane:
		if !cfg.Machine().Type().IsControlPlane() {
			return nil, nil, fmt.Errorf("%w: machine.type is %s: the control-plane images change on control-plane nodes only", ErrNotControlPlane, cfg.Machine().Type())
		}

		fields = []imageField{apiServerField, controllerManagerField, schedulerField}
		if cfg.Cluster().Proxy().Enabled() {
			fields = append(fields, proxyField)
		}
	case PartKubelet:
		fields = []imageField{kubeletField}
	default:
		return nil, nil, fmt.Errorf("part %q is not one of %q or %q: %s is not a machine configuration change", part, PartControlPlane, PartKubelet, part)
	}

	probe := raw.DeepCopy()
	ensureSections(probe)

	var changes []ImageChange

	images := make([]string, len(fields))

	for i, f := range fields {
		current := *f.image(probe)

		from, _, err := imageVersion(f, current)
		if err != nil {
			return nil, nil, err
		}

		images[i] = current
		if from == target {
			continue
		}

		if images[i], err = retag(f, current, target); err != nil {
			return nil, nil, err
		}

		changes = append(changes, ImageChange{Component: f.component, Field: f.path, From: from, To: target})
	}

	if len(changes) == 0 {
		return nil, nil, nil
	}

	patched, err := cfg.PatchV1Alpha1(func(c *v1alpha1.Config) error {
		ensureSections(c)

		for i, f := range fields {
			*f.image(c) = images[i]
		}

		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the changed configuration does not form a valid set of documents", ErrInvalidConfig)
	}

	desired, err := patched.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the changed configuration does not encode", ErrInvalidConfig)
	}

	return desired, changes, nil
}

// RunningVersions returns what a node running running runs according to
// its configuration: the versions of its images' tags. It refuses what
// ImagePatches refuses, but does not need every field set.
func RunningVersions(running []byte) (Versions, error) {
	cfg, raw, err := load(running)
	if err != nil {
		return Versions{}, err
	}

	probe := raw.DeepCopy()
	ensureSections(probe)

	var v Versions

	if v.Kubelet, _, err = imageVersion(kubeletField, *kubeletField.image(probe)); err != nil {
		return Versions{}, err
	}

	if !cfg.Machine().Type().IsControlPlane() {
		return v, nil
	}

	v.ControlPlane = true
	v.StaticPods = map[Component]string{}

	runs := map[Component]bool{
		ComponentAPIServer:         true,
		ComponentControllerManager: !cfg.Machine().Controlplane().ControllerManager().Disabled(),
		ComponentScheduler:         !cfg.Machine().Controlplane().Scheduler().Disabled(),
	}

	for _, f := range []imageField{apiServerField, controllerManagerField, schedulerField} {
		version, _, err := imageVersion(f, *f.image(probe))
		if err != nil {
			return Versions{}, err
		}

		if runs[f.component] {
			v.StaticPods[f.component] = version
		}
	}

	if cfg.Cluster().Proxy().Enabled() {
		if v.KubeProxy, _, err = imageVersion(proxyField, *proxyField.image(probe)); err != nil {
			return Versions{}, err
		}
	}

	return v, nil
}

// KubeletRepository returns the repository of the kubelet image of a node
// running running, as its machine.kubelet.image names it without its tag
// ("mirror.example.com/siderolabs/kubelet"), or Talos' default
// (ghcr.io/siderolabs/kubelet) when the field is unset: the repository
// whose tags are the Kubernetes releases the node's kubelet can move to,
// since ImagePatches keeps it. It refuses what ImagePatches refuses, naming
// the field and never its value.
func KubeletRepository(running []byte) (string, error) {
	_, raw, err := load(running)
	if err != nil {
		return "", err
	}

	probe := raw.DeepCopy()
	ensureSections(probe)

	image := *kubeletField.image(probe)
	if image == "" {
		return kubeletField.defaultRepository, nil
	}

	if _, _, err := imageVersion(kubeletField, image); err != nil {
		return "", err
	}

	repository, _, err := parseImage(kubeletField, image)

	return repository, err
}

// load loads a machine configuration and its v1alpha1 document. Talos'
// loader errors are not wrapped: they can quote the configuration's values.
func load(data []byte) (*container.Container, *v1alpha1.Config, error) {
	provider, err := configloader.NewFromBytes(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the running configuration does not load", ErrInvalidConfig)
	}

	cfg, ok := provider.(*container.Container)
	if !ok || cfg.RawV1Alpha1() == nil {
		return nil, nil, fmt.Errorf("%w: the running configuration has no v1alpha1 document (machine, cluster)", ErrInvalidConfig)
	}

	return cfg, cfg.RawV1Alpha1(), nil
}

// ensureSections creates the machine and cluster sections of cfg when they
// are missing, so that the image fields can be reached.
func ensureSections(cfg *v1alpha1.Config) {
	if cfg.MachineConfig == nil {
		cfg.MachineConfig = &v1alpha1.MachineConfig{}
	}

	if cfg.ClusterConfig == nil {
		cfg.ClusterConfig = &v1alpha1.ClusterConfig{}
	}
}

// imageVersion returns the Kubernetes version of image's tag, canonical
// ("v1.35.2"), and the tag's variant suffix; "" for an unset field.
func imageVersion(f imageField, image string) (version, variant string, err error) {
	if image == "" {
		return "", "", nil
	}

	_, tag, err := parseImage(f, image)
	if err != nil {
		return "", "", err
	}

	for _, suffix := range f.variants {
		if trimmed, ok := strings.CutSuffix(tag, suffix); ok {
			tag, variant = trimmed, suffix

			break
		}
	}

	version, err = canonicalVersion(tag)
	if err != nil {
		return "", "", fmt.Errorf("%w: the tag of %s is not a Kubernetes version such as v1.35.2", ErrInvalidImage, f.path)
	}

	return version, variant, nil
}

// retag returns image with tag version (and its variant suffix), keeping
// its repository; an unset image gets the field's default repository.
func retag(f imageField, image, version string) (string, error) {
	if image == "" {
		return f.defaultRepository + ":" + version, nil
	}

	repository, _, err := parseImage(f, image)
	if err != nil {
		return "", err
	}

	_, variant, err := imageVersion(f, image)
	if err != nil {
		return "", err
	}

	return repository + ":" + version + variant, nil
}

// parseImage splits image into its repository, as written, and its tag. It
// refuses an image that does not parse, has no tag or is pinned by digest.
func parseImage(f imageField, image string) (repository, tag string, err error) {
	ref, err := reference.Parse(image)
	if err != nil {
		// reference's errors are fixed messages, without the value.
		return "", "", fmt.Errorf("%w: %s does not parse as an image reference: %w", ErrInvalidImage, f.path, err)
	}

	if _, ok := ref.(reference.Digested); ok {
		return "", "", fmt.Errorf("%w: %s names its image by digest, and Tollgate changes the tag only: set the image by tag (repository:%s) and let Tollgate change the tag", ErrDigestImage, f.path, "vX.Y.Z")
	}

	named, ok := ref.(reference.Named)
	if !ok {
		return "", "", fmt.Errorf("%w: %s has no repository", ErrInvalidImage, f.path)
	}

	tagged, ok := ref.(reference.Tagged)
	if !ok {
		return "", "", fmt.Errorf("%w: %s has no tag: set one that is the Kubernetes version it runs, such as v1.35.2", ErrInvalidImage, f.path)
	}

	return named.Name(), tagged.Tag(), nil
}

// canonicalVersion returns v, a Kubernetes version with or without its "v",
// as Kubernetes tags and reports it: "1.36.0" becomes "v1.36.0".
func canonicalVersion(v string) (string, error) {
	parsed, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	if err != nil {
		return "", fmt.Errorf("%w %q: use MAJOR.MINOR.PATCH such as v1.36.0", ErrInvalidVersion, v)
	}

	return "v" + parsed.String(), nil
}
