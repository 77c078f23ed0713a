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
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"k8s.io/utils/ptr"
)

// bundle is the secrets bundle every fixture shares, as the Machines of one
// Cluster do.
var bundle = sync.OnceValues(func() (*secrets.Bundle, error) {
	return secrets.NewBundle(secrets.NewFixedClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), config.TalosVersionCurrent)
})

// generated returns the configuration Talos' generator makes for a node of
// kind in Cluster "alpha" on Kubernetes 1.35.0 (two documents: v1alpha1
// and the hostname's), changed by edits.
func generated(tb testing.TB, kind machine.Type, edits ...func(*v1alpha1.Config)) []byte {
	tb.Helper()

	b, err := bundle()
	if err != nil {
		tb.Fatalf("generating the secrets bundle: %v", err)
	}

	in, err := generate.NewInput("alpha", "https://10.0.0.1:6443", "1.35.0", generate.WithSecretsBundle(b))
	if err != nil {
		tb.Fatalf("preparing the configuration: %v", err)
	}

	cfg, err := in.Config(kind)
	if err != nil {
		tb.Fatalf("generating the configuration: %v", err)
	}

	if len(edits) > 0 {
		cfg, err = cfg.PatchV1Alpha1(func(c *v1alpha1.Config) error {
			for _, edit := range edits {
				edit(c)
			}

			return nil
		})
		if err != nil {
			tb.Fatalf("editing the configuration: %v", err)
		}
	}

	out, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDocs))
	if err != nil {
		tb.Fatalf("encoding the configuration: %v", err)
	}

	return out
}

func controlPlane(tb testing.TB, edits ...func(*v1alpha1.Config)) []byte {
	tb.Helper()

	return generated(tb, machine.TypeControlPlane, edits...)
}

func worker(tb testing.TB, edits ...func(*v1alpha1.Config)) []byte {
	tb.Helper()

	return generated(tb, machine.TypeWorker, edits...)
}

// canonical returns data loaded and encoded without comments, as
// ImagePatches encodes what it returns.
func canonical(tb testing.TB, data []byte) string {
	tb.Helper()

	cfg, err := configloader.NewFromBytes(data)
	if err != nil {
		tb.Fatalf("loading the configuration: %v", err)
	}

	out, err := cfg.(*container.Container).Clone().EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		tb.Fatalf("encoding the configuration: %v", err)
	}

	return string(out)
}

// Edits of a generated configuration.
func withImages(apiServer, controllerManager, scheduler, proxy, kubelet string) func(*v1alpha1.Config) {
	return func(c *v1alpha1.Config) {
		if c.ClusterConfig.APIServerConfig != nil {
			c.ClusterConfig.APIServerConfig.ContainerImage = apiServer
			c.ClusterConfig.ControllerManagerConfig.ContainerImage = controllerManager
			c.ClusterConfig.SchedulerConfig.ContainerImage = scheduler
			c.ClusterConfig.ProxyConfig.ContainerImage = proxy
		}

		c.MachineConfig.MachineKubelet.KubeletImage = kubelet
	}
}

func withKubelet(image string) func(*v1alpha1.Config) {
	return func(c *v1alpha1.Config) { c.MachineConfig.MachineKubelet.KubeletImage = image }
}

func withAPIServer(image string) func(*v1alpha1.Config) {
	return func(c *v1alpha1.Config) { c.ClusterConfig.APIServerConfig.ContainerImage = image }
}

func withProxyDisabled(c *v1alpha1.Config) {
	c.ClusterConfig.ProxyConfig.Disabled = ptr.To(true)
}

func withSchedulerDisabled(c *v1alpha1.Config) {
	c.MachineConfig.MachineControlPlane = &v1alpha1.MachineControlPlaneConfig{
		MachineScheduler: &v1alpha1.MachineSchedulerConfig{MachineSchedulerDisabled: ptr.To(true)},
	}
}
