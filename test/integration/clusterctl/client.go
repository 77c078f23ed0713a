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

package clusterctl

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctlcluster "sigs.k8s.io/cluster-api/cmd/clusterctl/client/cluster"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
)

// NewClient returns clusterctl's client configured by the clusterctl.yaml at
// configPath (clusterctl's own defaults when empty), as `clusterctl
// --config configPath` builds it, except for the management cluster's
// Kubernetes version check (see NewClusterClient).
func NewClient(ctx context.Context, configPath string) (clusterctlclient.Client, error) {
	cfg, err := clusterctlconfig.New(ctx, configPath)
	if err != nil {
		return nil, fmt.Errorf("reading clusterctl's configuration %q: %w", configPath, err)
	}
	c, err := clusterctlclient.New(ctx, configPath, clusterctlclient.InjectConfig(cfg),
		clusterctlclient.InjectClusterClientFactory(func(in clusterctlclient.ClusterClientFactoryInput) (clusterctlcluster.Client, error) {
			return NewClusterClient(clusterctlcluster.Kubeconfig(in.Kubeconfig), cfg, in.Processor), nil
		}))
	if err != nil {
		return nil, fmt.Errorf("creating a clusterctl client: %w", err)
	}
	return c, nil
}

// NewClusterClient returns clusterctl's client of a management cluster, as
// clusterctl builds it, except that it accepts an apiserver without a
// version: hack/envtest-assets.sh builds kube-apiserver from source where no
// release can be downloaded, and that one says v0.0.0-master, below
// clusterctl's minimum.
func NewClusterClient(kubeconfig clusterctlcluster.Kubeconfig, cfg clusterctlconfig.Client, processor yamlprocessor.Processor) clusterctlcluster.Client {
	return clusterctlcluster.New(kubeconfig, cfg,
		clusterctlcluster.InjectProxy(unversionedProxy{clusterctlcluster.NewProxy(kubeconfig)}),
		clusterctlcluster.InjectYamlProcessor(processor))
}

// unversionedProxy is clusterctl's proxy to a management cluster, but for
// its Kubernetes version check of a v0.0.0 apiserver.
type unversionedProxy struct {
	clusterctlcluster.Proxy
}

func (p unversionedProxy) ValidateKubernetesVersion() error {
	cfg, err := p.GetConfig()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return err
	}
	if strings.HasPrefix(v.GitVersion, "v0.0.0-") {
		return nil
	}
	return p.Proxy.ValidateKubernetesVersion()
}
