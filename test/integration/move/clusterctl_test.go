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

package move

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctlcluster "sigs.k8s.io/cluster-api/cmd/clusterctl/client/cluster"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/integration/clusterctl"
)

// The providers a management cluster's clusterctl inventory lists; clusterctl
// move checks that the target has each at least at the source's version.
var providers = []clusterctlv1.Provider{
	{
		ObjectMeta:   metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		ProviderName: "cluster-api", Type: string(clusterctlv1.CoreProviderType), Version: "v1.14.2",
	},
	{
		ObjectMeta:   metav1.ObjectMeta{Namespace: "tollgate-system", Name: "addon-tollgate"},
		ProviderName: "tollgate", Type: string(clusterctlv1.AddonProviderType), Version: "v0.1.0",
	},
}

// installAsClusterctl makes an envtest management cluster look like one
// `clusterctl init` installed, as far as clusterctl move reads it:
//   - every CRD carries clusterctl's label (clusterctl labels every component
//     it installs, and move discovers only the kinds of labelled CRDs);
//   - Tollgate's CRDs carry the labels config/crd renders, so the move label
//     comes from the kustomization that `make release-manifests` ships, not
//     from this test;
//   - the clusterctl inventory lists CAPI and Tollgate.
//
// It returns the path of an administrator kubeconfig of the cluster.
func installAsClusterctl(ctx context.Context, t *testing.T, sb *sandbox.Sandbox, name string) string {
	t.Helper()
	mgmt := sb.Management
	rendered := renderedCRDLabels(t)
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := mgmt.Client.List(ctx, crds); err != nil {
		t.Fatalf("Listing the CRDs of the %s management cluster: %v", name, err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		patch := client.MergeFrom(crd.DeepCopy())
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[clusterctlv1.ClusterctlLabel] = ""
		for k, v := range rendered[crd.Name] {
			crd.Labels[k] = v
		}
		if err := mgmt.Client.Patch(ctx, crd, patch); err != nil {
			t.Fatalf("Labelling CRD %s: %v", crd.Name, err)
		}
	}

	kubeconfig, err := sb.WriteKubeconfig(t.TempDir())
	if err != nil {
		t.Fatalf("Writing the kubeconfig of the %s management cluster: %v", name, err)
	}
	cfg, err := clusterctlconfig.New(ctx, "")
	if err != nil {
		t.Fatalf("Reading clusterctl's configuration: %v", err)
	}
	inventory := clusterctl.NewClusterClient(clusterctlcluster.Kubeconfig{Path: kubeconfig}, cfg, nil).ProviderInventory()
	if err := inventory.EnsureCustomResourceDefinitions(ctx); err != nil {
		t.Fatalf("Installing clusterctl's inventory CRD in the %s management cluster: %v", name, err)
	}
	for _, p := range providers {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}
		if err := mgmt.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Creating Namespace %s: %v", p.Namespace, err)
		}
		if err := inventory.Create(ctx, p); err != nil {
			t.Fatalf("Adding %s to the inventory of the %s management cluster: %v", p.Name, name, err)
		}
	}
	return kubeconfig
}

// renderedCRDLabels returns the labels config/crd puts on each of Tollgate's
// CRDs, by CRD name.
func renderedCRDLabels(t *testing.T) map[string]map[string]string {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(envtest.RepoRoot(), "config", "crd"))
	if err != nil {
		t.Fatalf("Building config/crd: %v", err)
	}
	out := map[string]map[string]string{}
	for _, r := range m.Resources() {
		if r.GetKind() == "CustomResourceDefinition" {
			out[r.GetName()] = r.GetLabels()
		}
	}
	if len(out) == 0 {
		t.Fatal("config/crd renders no CRD")
	}
	return out
}

// clusterctlMove runs `clusterctl move -n namespace` from one management
// cluster to another, with clusterctl's own library.
func clusterctlMove(ctx context.Context, from, to, namespace string) error {
	c, err := clusterctl.NewClient(ctx, "")
	if err != nil {
		return err
	}
	return c.Move(ctx, clusterctlclient.MoveOptions{
		FromKubeconfig: clusterctlclient.Kubeconfig{Path: from},
		ToKubeconfig:   clusterctlclient.Kubeconfig{Path: to},
		Namespace:      namespace,
	})
}

// tollgateObjects counts Tollgate's objects in a namespace, by kind.
func tollgateObjects(ctx context.Context, t *testing.T, c client.Client, namespace string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for kind, list := range map[string]client.ObjectList{
		"TalosUpgradePolicy": &upgradev1.TalosUpgradePolicyList{},
		"ClusterHealthCheck": &upgradev1.ClusterHealthCheckList{},
		"TalosUpgrade":       &upgradev1.TalosUpgradeList{},
	} {
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			t.Fatalf("Listing %s: %v", kind, err)
		}
		out[kind] = meta.LenList(list)
	}
	return out
}
