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

package kubernetes_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

const (
	apiServer135         = "registry.k8s.io/kube-apiserver:v1.35.0"
	controllerManager135 = "registry.k8s.io/kube-controller-manager:v1.35.0"
	scheduler135         = "registry.k8s.io/kube-scheduler:v1.35.0"
	proxy135             = "registry.k8s.io/kube-proxy:v1.35.0"
	kubelet135           = "ghcr.io/siderolabs/kubelet:v1.35.0"
	digest               = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestImagePatches(t *testing.T) {
	mirror := withImages(
		"mirror.example.com:5000/k8s/kube-apiserver:v1.35.0",
		"mirror.example.com:5000/k8s/kube-controller-manager:v1.35.0",
		"mirror.example.com:5000/k8s/kube-scheduler:v1.35.0",
		"mirror.example.com:5000/k8s/kube-proxy:v1.35.0",
		"mirror.example.com:5000/siderolabs/kubelet:v1.35.0",
	)

	tests := []struct {
		name    string
		running []byte
		part    kubernetes.Part
		version string
		// replaced are the images that change, old to new: the desired
		// configuration is the running one with them replaced.
		replaced map[string]string
		changes  []kubernetes.ImageChange
	}{
		{
			name:    "control plane: the static Pods' images and kube-proxy's",
			running: controlPlane(t),
			part:    kubernetes.PartControlPlane,
			version: "v1.36.0",
			replaced: map[string]string{
				apiServer135:         "registry.k8s.io/kube-apiserver:v1.36.0",
				controllerManager135: "registry.k8s.io/kube-controller-manager:v1.36.0",
				scheduler135:         "registry.k8s.io/kube-scheduler:v1.36.0",
				proxy135:             "registry.k8s.io/kube-proxy:v1.36.0",
			},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentAPIServer, Field: "cluster.apiServer.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentControllerManager, Field: "cluster.controllerManager.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentScheduler, Field: "cluster.scheduler.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentKubeProxy, Field: "cluster.proxy.image", From: "v1.35.0", To: "v1.36.0"},
			},
		},
		{
			name:    "control plane without kube-proxy: its image is left alone",
			running: controlPlane(t, withProxyDisabled),
			part:    kubernetes.PartControlPlane,
			version: "1.36.0",
			replaced: map[string]string{
				apiServer135:         "registry.k8s.io/kube-apiserver:v1.36.0",
				controllerManager135: "registry.k8s.io/kube-controller-manager:v1.36.0",
				scheduler135:         "registry.k8s.io/kube-scheduler:v1.36.0",
			},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentAPIServer, Field: "cluster.apiServer.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentControllerManager, Field: "cluster.controllerManager.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentScheduler, Field: "cluster.scheduler.image", From: "v1.35.0", To: "v1.36.0"},
			},
		},
		{
			name:    "control plane, one image already there: the others change",
			running: controlPlane(t, withAPIServer("registry.k8s.io/kube-apiserver:v1.35.2")),
			part:    kubernetes.PartControlPlane,
			version: "v1.35.2",
			replaced: map[string]string{
				controllerManager135: "registry.k8s.io/kube-controller-manager:v1.35.2",
				scheduler135:         "registry.k8s.io/kube-scheduler:v1.35.2",
				proxy135:             "registry.k8s.io/kube-proxy:v1.35.2",
			},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentControllerManager, Field: "cluster.controllerManager.image", From: "v1.35.0", To: "v1.35.2"},
				{Component: kubernetes.ComponentScheduler, Field: "cluster.scheduler.image", From: "v1.35.0", To: "v1.35.2"},
				{Component: kubernetes.ComponentKubeProxy, Field: "cluster.proxy.image", From: "v1.35.0", To: "v1.35.2"},
			},
		},
		{
			name:    "the kubelet of a control-plane node: nothing else",
			running: controlPlane(t),
			part:    kubernetes.PartKubelet,
			version: "v1.36.0",
			replaced: map[string]string{
				kubelet135: "ghcr.io/siderolabs/kubelet:v1.36.0",
			},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentKubelet, Field: "machine.kubelet.image", From: "v1.35.0", To: "v1.36.0"},
			},
		},
		{
			name:     "the kubelet of a worker",
			running:  worker(t),
			part:     kubernetes.PartKubelet,
			version:  "v1.36.1",
			replaced: map[string]string{kubelet135: "ghcr.io/siderolabs/kubelet:v1.36.1"},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentKubelet, Field: "machine.kubelet.image", From: "v1.35.0", To: "v1.36.1"},
			},
		},
		{
			name:    "a mirror stays the mirror",
			running: controlPlane(t, mirror),
			part:    kubernetes.PartControlPlane,
			version: "v1.36.0",
			replaced: map[string]string{
				"mirror.example.com:5000/k8s/kube-apiserver:v1.35.0":          "mirror.example.com:5000/k8s/kube-apiserver:v1.36.0",
				"mirror.example.com:5000/k8s/kube-controller-manager:v1.35.0": "mirror.example.com:5000/k8s/kube-controller-manager:v1.36.0",
				"mirror.example.com:5000/k8s/kube-scheduler:v1.35.0":          "mirror.example.com:5000/k8s/kube-scheduler:v1.36.0",
				"mirror.example.com:5000/k8s/kube-proxy:v1.35.0":              "mirror.example.com:5000/k8s/kube-proxy:v1.36.0",
			},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentAPIServer, Field: "cluster.apiServer.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentControllerManager, Field: "cluster.controllerManager.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentScheduler, Field: "cluster.scheduler.image", From: "v1.35.0", To: "v1.36.0"},
				{Component: kubernetes.ComponentKubeProxy, Field: "cluster.proxy.image", From: "v1.35.0", To: "v1.36.0"},
			},
		},
		{
			name:     "a mirror of the kubelet, on a worker",
			running:  worker(t, mirror),
			part:     kubernetes.PartKubelet,
			version:  "v1.36.0",
			replaced: map[string]string{"mirror.example.com:5000/siderolabs/kubelet:v1.35.0": "mirror.example.com:5000/siderolabs/kubelet:v1.36.0"},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentKubelet, Field: "machine.kubelet.image", From: "v1.35.0", To: "v1.36.0"},
			},
		},
		{
			name:     "a kubelet variant is kept",
			running:  worker(t, withKubelet("ghcr.io/siderolabs/kubelet:v1.35.0-fat")),
			part:     kubernetes.PartKubelet,
			version:  "v1.36.0",
			replaced: map[string]string{"ghcr.io/siderolabs/kubelet:v1.35.0-fat": "ghcr.io/siderolabs/kubelet:v1.36.0-fat"},
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentKubelet, Field: "machine.kubelet.image", From: "v1.35.0", To: "v1.36.0"},
			},
		},
		{
			name:    "an unset kubelet image gets Talos' default repository",
			running: worker(t, withKubelet("")),
			part:    kubernetes.PartKubelet,
			version: "v1.36.0",
			changes: []kubernetes.ImageChange{
				{Component: kubernetes.ComponentKubelet, Field: "machine.kubelet.image", From: "", To: "v1.36.0"},
			},
		},
		{
			name:    "already there: nothing to apply",
			running: controlPlane(t),
			part:    kubernetes.PartControlPlane,
			version: "v1.35.0",
		},
		{
			name:    "the kubelet already there",
			running: worker(t),
			part:    kubernetes.PartKubelet,
			version: "1.35.0",
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			desired, changes, err := kubernetes.ImagePatches(tt.running, tt.part, tt.version)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changes).To(Equal(tt.changes))

			if len(tt.changes) == 0 {
				g.Expect(desired).To(BeNil())

				return
			}

			// Nothing but the images changes, and the result is a valid
			// configuration that Tollgate's in-place rules accept.
			if tt.replaced != nil {
				want := canonical(t, tt.running)
				for old, image := range tt.replaced {
					g.Expect(want).To(ContainSubstring("image: "+old+"\n"), "fixture")
					want = strings.ReplaceAll(want, "image: "+old+"\n", "image: "+image+"\n")
				}
				g.Expect(string(desired)).To(Equal(want))
			}

			_, err = configloader.NewFromBytes(desired)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(machineconfig.CheckInPlace(tt.running, desired)).To(Succeed())

			// Read back, the node runs the version; applied again, the
			// change is done.
			again, more, err := kubernetes.ImagePatches(desired, tt.part, tt.version)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(BeNil())
			g.Expect(more).To(BeEmpty())
		})
	}
}

func TestImagePatchesSetsAnUnsetImage(t *testing.T) {
	g := NewWithT(t)

	desired, _, err := kubernetes.ImagePatches(worker(t, withKubelet("")), kubernetes.PartKubelet, "v1.36.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(desired)).To(ContainSubstring("image: ghcr.io/siderolabs/kubelet:v1.36.0\n"))
}

// TestImagePatchesRefuses finds each refusal naming the field, never its
// value, and nothing returned.
func TestImagePatchesRefuses(t *testing.T) {
	tests := []struct {
		name    string
		running []byte
		part    kubernetes.Part
		version string
		err     error
		// says is in the message; hidden is not.
		says   []string
		hidden []string
	}{
		{
			name:    "an image pinned by digest",
			running: controlPlane(t, withAPIServer("mirror.example.com/kube-apiserver:v1.35.0"+digest)),
			part:    kubernetes.PartControlPlane,
			version: "v1.36.0",
			err:     kubernetes.ErrDigestImage,
			says:    []string{"cluster.apiServer.image", "digest"},
			hidden:  []string{"mirror.example.com", "0123456789"},
		},
		{
			name:    "an image by digest only",
			running: worker(t, withKubelet("mirror.example.com/kubelet"+digest)),
			part:    kubernetes.PartKubelet,
			version: "v1.36.0",
			err:     kubernetes.ErrDigestImage,
			says:    []string{"machine.kubelet.image"},
			hidden:  []string{"mirror.example.com", "0123456789"},
		},
		{
			name:    "an image that does not parse",
			running: worker(t, withKubelet("Mirror.Example.com/Kubelet:v1.35.0")),
			part:    kubernetes.PartKubelet,
			version: "v1.36.0",
			err:     kubernetes.ErrInvalidImage,
			says:    []string{"machine.kubelet.image", "does not parse"},
			hidden:  []string{"Mirror.Example.com", "Kubelet:"},
		},
		{
			name:    "an image without a tag",
			running: controlPlane(t, withAPIServer("mirror.example.com/kube-apiserver")),
			part:    kubernetes.PartControlPlane,
			version: "v1.36.0",
			err:     kubernetes.ErrInvalidImage,
			says:    []string{"cluster.apiServer.image", "no tag"},
			hidden:  []string{"mirror.example.com"},
		},
		{
			name:    "a tag that is not a version",
			running: worker(t, withKubelet("mirror.example.com/kubelet:stable-secret")),
			part:    kubernetes.PartKubelet,
			version: "v1.36.0",
			err:     kubernetes.ErrInvalidImage,
			says:    []string{"machine.kubelet.image", "not a Kubernetes version"},
			hidden:  []string{"mirror.example.com", "stable-secret"},
		},
		{
			name:    "the control plane of a worker",
			running: worker(t),
			part:    kubernetes.PartControlPlane,
			version: "v1.36.0",
			err:     kubernetes.ErrNotControlPlane,
			says:    []string{"machine.type", "worker"},
		},
		{
			name:    "a target that is not a version",
			running: worker(t),
			part:    kubernetes.PartKubelet,
			version: "1.36",
			err:     kubernetes.ErrInvalidVersion,
		},
		{
			name:    "a configuration that does not load",
			running: []byte("version: v1alpha1\nmachine:\n  type: worker\n  token: averysecretmachinetoken\n  unknownField: averysecretvalue\n"),
			part:    kubernetes.PartKubelet,
			version: "v1.36.0",
			err:     kubernetes.ErrInvalidConfig,
			hidden:  []string{"averysecret"},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			desired, changes, err := kubernetes.ImagePatches(tt.running, tt.part, tt.version)
			g.Expect(err).To(MatchError(tt.err))
			g.Expect(desired).To(BeNil())
			g.Expect(changes).To(BeNil())

			for _, s := range tt.says {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}

			for _, s := range tt.hidden {
				g.Expect(err.Error()).NotTo(ContainSubstring(s))
			}

			// RunningVersions refuses the same images.
			if !errors.Is(tt.err, kubernetes.ErrNotControlPlane) && !errors.Is(tt.err, kubernetes.ErrInvalidVersion) {
				_, err := kubernetes.RunningVersions(tt.running)
				g.Expect(err).To(MatchError(tt.err))
			}
		})
	}
}

func TestImagePatchesRefusesAnotherPart(t *testing.T) {
	g := NewWithT(t)

	_, _, err := kubernetes.ImagePatches(controlPlane(t), kubernetes.PartKubeProxy, "v1.36.0")
	g.Expect(err).To(MatchError(ContainSubstring("not a machine configuration change")))
}

func TestRunningVersions(t *testing.T) {
	tests := []struct {
		name       string
		running    []byte
		want       kubernetes.Versions
		components []kubernetes.Component
	}{
		{
			name:    "a control-plane node",
			running: controlPlane(t),
			want: kubernetes.Versions{
				ControlPlane: true,
				Kubelet:      "v1.35.0",
				StaticPods: map[kubernetes.Component]string{
					kubernetes.ComponentAPIServer: "v1.35.0", kubernetes.ComponentControllerManager: "v1.35.0", kubernetes.ComponentScheduler: "v1.35.0",
				},
				KubeProxy: "v1.35.0",
			},
			components: []kubernetes.Component{kubernetes.ComponentAPIServer, kubernetes.ComponentControllerManager, kubernetes.ComponentScheduler},
		},
		{
			name: "a control-plane node halfway, from a mirror, without kube-proxy or a scheduler",
			running: controlPlane(t,
				withImages("mirror.example.com/kube-apiserver:v1.36.0", "mirror.example.com/kube-controller-manager:1.35.2",
					"mirror.example.com/kube-scheduler:v1.35.2", "mirror.example.com/kube-proxy:v1.35.2", "mirror.example.com/kubelet:v1.35.2-slim"),
				withProxyDisabled, withSchedulerDisabled),
			want: kubernetes.Versions{
				ControlPlane: true,
				Kubelet:      "v1.35.2",
				StaticPods: map[kubernetes.Component]string{
					kubernetes.ComponentAPIServer: "v1.36.0", kubernetes.ComponentControllerManager: "v1.35.2",
				},
			},
			components: []kubernetes.Component{kubernetes.ComponentAPIServer, kubernetes.ComponentControllerManager},
		},
		{
			name:    "a worker",
			running: worker(t),
			want:    kubernetes.Versions{Kubelet: "v1.35.0"},
		},
		{
			name:    "a worker whose kubelet image is unset",
			running: worker(t, withKubelet("")),
			want:    kubernetes.Versions{},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, err := kubernetes.RunningVersions(tt.running)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got.StaticPodComponents()).To(Equal(tt.components))
		})
	}
}

func TestKubeletRepository(t *testing.T) {
	tests := []struct {
		name    string
		running []byte
		want    string
		err     error
	}{
		{name: "Talos' default image", running: worker(t), want: "ghcr.io/siderolabs/kubelet"},
		{name: "an unset image: Talos' default", running: worker(t, withKubelet("")), want: "ghcr.io/siderolabs/kubelet"},
		{name: "a mirror, with a port and a variant", running: controlPlane(t, withKubelet("mirror.example.com:5000/siderolabs/kubelet:v1.35.2-fat")), want: "mirror.example.com:5000/siderolabs/kubelet"},
		{name: "pinned by digest", running: worker(t, withKubelet("ghcr.io/siderolabs/kubelet:v1.35.0"+digest)), err: kubernetes.ErrDigestImage},
		{name: "a tag that is no version", running: worker(t, withKubelet("ghcr.io/siderolabs/kubelet:latest")), err: kubernetes.ErrInvalidImage},
		{name: "no configuration", running: []byte("not: a config"), err: kubernetes.ErrInvalidConfig},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, err := kubernetes.KubeletRepository(tt.running)
			if tt.err != nil {
				g.Expect(err).To(MatchError(tt.err))

				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
