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
	"testing"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

func TestGenerateMachineConfig(t *testing.T) {
	bundle, err := newBundle("v1.12")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		name    string
		spec    bootstrapv1.TalosConfigSpec
		want    machine.Type
		wantErr string
		check   func(g Gomega, data []byte)
	}{
		{name: "init", spec: bootstrapv1.TalosConfigSpec{GenerateType: "init", TalosVersion: "v1.12"}, want: machine.TypeInit},
		{name: "controlplane", spec: bootstrapv1.TalosConfigSpec{GenerateType: "controlplane", TalosVersion: "v1.12"}, want: machine.TypeControlPlane},
		{name: "worker, latest contract", spec: bootstrapv1.TalosConfigSpec{GenerateType: "worker"}, want: machine.TypeWorker},
		{
			// JSON patches need a single-document configuration: Talos
			// refuses them on the multi-document ones of v1.12 and later.
			name: "patches", want: machine.TypeWorker,
			spec: bootstrapv1.TalosConfigSpec{
				GenerateType: "worker", TalosVersion: "v1.10",
				ConfigPatches:    []bootstrapv1.ConfigPatches{{Op: "add", Path: "/machine/install/disk", Value: apiextensionsv1.JSON{Raw: []byte(`"/dev/vdb"`)}}},
				StrategicPatches: []string{"machine:\n  kubelet:\n    extraArgs:\n      max-pods: \"42\"\n"},
			},
			check: func(g Gomega, data []byte) {
				cfg, err := configloader.NewFromBytes(data)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.Machine().Install().Disk()).To(Equal("/dev/vdb"))
				g.Expect(cfg.Machine().Kubelet().ExtraArgs()).To(HaveKeyWithValue("max-pods", ContainElement("42")))
			},
		},
		{
			name: "strategic patch, multi-document", want: machine.TypeControlPlane,
			spec: bootstrapv1.TalosConfigSpec{
				GenerateType: "controlplane", TalosVersion: "v1.12",
				StrategicPatches: []string{"machine:\n  install:\n    disk: /dev/vdc\n"},
			},
			check: func(g Gomega, data []byte) {
				cfg, err := configloader.NewFromBytes(data)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.Machine().Install().Disk()).To(Equal("/dev/vdc"))
			},
		},
		{name: "none", spec: bootstrapv1.TalosConfigSpec{GenerateType: "none", Data: "version: v1alpha1\nmachine:\n  type: worker\n"}, want: machine.TypeWorker},
		{name: "none without data", spec: bootstrapv1.TalosConfigSpec{GenerateType: "none"}, wantErr: "needs spec.data"},
		{name: "bad type", spec: bootstrapv1.TalosConfigSpec{GenerateType: "master"}, wantErr: `unknown generateType "master"`},
		{name: "bad version", spec: bootstrapv1.TalosConfigSpec{GenerateType: "worker", TalosVersion: "twelve"}, wantErr: `talosVersion "twelve"`},
		{name: "bad patch", spec: bootstrapv1.TalosConfigSpec{GenerateType: "worker", ConfigPatches: []bootstrapv1.ConfigPatches{{Op: "remove", Path: "/no/such/field"}}}, wantErr: "applying the config patches"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			data, err := generateMachineConfig(machineConfigInput{
				spec: tt.spec, clusterName: "prod", endpoint: clusterv1.APIEndpoint{Host: "10.0.0.1", Port: 6443},
				kubernetesVersion: "v1.34.1", bundle: bundle,
			})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))

				return
			}

			g.Expect(err).NotTo(HaveOccurred())

			cfg, err := configloader.NewFromBytes(data)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Machine().Type()).To(Equal(tt.want))

			if tt.spec.GenerateType != bootstrapv1.GenerateTypeNone {
				g.Expect(cfg.Cluster().Name()).To(Equal("prod"))
				g.Expect(cfg.Cluster().Endpoint().String()).To(Equal("https://10.0.0.1:6443"))
				g.Expect(cfg.Machine().Kubelet().Image()).To(HaveSuffix(":v1.34.1"))
				g.Expect(cfg.Cluster().IssuingCA().Crt).To(Equal(bundle.Certs.K8s.Crt), "the Cluster's shared PKI")
			}

			if tt.check != nil {
				tt.check(g, data)
			}
		})
	}
}

func TestBundleRoundTrip(t *testing.T) {
	g := NewWithT(t)

	bundle, err := newBundle("")
	g.Expect(err).NotTo(HaveOccurred())

	data, err := marshalBundle(bundle)
	g.Expect(err).NotTo(HaveOccurred())

	back, err := unmarshalBundle(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Certs.OS.Crt).To(Equal(bundle.Certs.OS.Crt))
	g.Expect(back.Secrets.BootstrapToken).To(Equal(bundle.Secrets.BootstrapToken))

	_, err = unmarshalBundle([]byte("{}"))
	g.Expect(err).To(HaveOccurred())
}
