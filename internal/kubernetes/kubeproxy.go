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
	"context"
	"errors"
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeProxyName is the name of the kube-proxy DaemonSet and of its
// container in Talos' bootstrap manifests.
const kubeProxyName = "kube-proxy"

// ErrKubeProxyNotFound is wrapped by the errors of UpdateKubeProxy and
// KubeProxyRolledOut when the workload cluster has no kube-proxy DaemonSet
// (or it has no kube-proxy container): a Cluster whose configuration does
// not disable kube-proxy should have one.
var ErrKubeProxyNotFound = errors.New("kube-proxy DaemonSet not found")

// kubeProxyField names the DaemonSet's image in errors.
var kubeProxyField = imageField{
	component: ComponentKubeProxy, path: "the image of DaemonSet kube-system/kube-proxy", defaultRepository: constants.KubeProxyImage,
}

// UpdateKubeProxy sets the image of the kube-proxy DaemonSet in kube-system
// of the workload cluster c to Kubernetes version, keeping its repository,
// and reports whether it changed it: what a PartKubeProxy step does. Talos
// creates the DaemonSet from its bootstrap manifests once and never updates
// it, whatever cluster.proxy.image says later; talosctl upgrade-k8s updates
// it through the Kubernetes API too. Only the image changes: the rest of the
// DaemonSet (its arguments, its update strategy) is left as it is. The
// update carries the DaemonSet's resourceVersion, so that a concurrent
// change is not overwritten (a conflict error: retry). It refuses an image
// that does not parse, or is pinned by digest, as ImagePatches does.
func UpdateKubeProxy(ctx context.Context, c client.Client, version string) (changed bool, err error) {
	target, err := canonicalVersion(version)
	if err != nil {
		return false, err
	}

	ds, i, err := getKubeProxy(ctx, c)
	if err != nil {
		return false, err
	}

	image := ds.Spec.Template.Spec.Containers[i].Image

	running, _, err := imageVersion(kubeProxyField, image)
	if err != nil {
		return false, err
	}

	if running == target {
		return false, nil
	}

	updated, err := retag(kubeProxyField, image, target)
	if err != nil {
		return false, err
	}

	before := ds.DeepCopy()
	ds.Spec.Template.Spec.Containers[i].Image = updated

	if err := c.Patch(ctx, ds, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("updating the image of DaemonSet %s/%s: %w", kubeSystemNamespace, kubeProxyName, err)
	}

	return true, nil
}

// KubeProxyRolledOut reports whether the kube-proxy DaemonSet of the
// workload cluster c runs version on every node it schedules to, as
// "kubectl rollout status" reads a DaemonSet: its controller observed the
// current generation, and every scheduled Pod is updated and available.
// When it does not, message says what it waits for. A DaemonSet whose
// updateStrategy is OnDelete never rolls out by itself: message says so.
func KubeProxyRolledOut(ctx context.Context, c client.Reader, version string) (ok bool, message string, err error) {
	target, err := canonicalVersion(version)
	if err != nil {
		return false, "", err
	}

	ds, i, err := getKubeProxy(ctx, c)
	if err != nil {
		return false, "", err
	}

	running, _, err := imageVersion(kubeProxyField, ds.Spec.Template.Spec.Containers[i].Image)
	if err != nil {
		return false, "", err
	}

	status := ds.Status

	switch {
	case running != target:
		return false, fmt.Sprintf("Waiting for DaemonSet kube-system/kube-proxy to be updated: its image is %s, not %s", running, target), nil
	case ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
		return false, "Waiting for DaemonSet kube-system/kube-proxy to roll out: its updateStrategy is OnDelete, so its Pods change only when deleted; delete them node by node, or set updateStrategy RollingUpdate", nil
	case status.ObservedGeneration < ds.Generation:
		return false, "Waiting for the DaemonSet controller to observe DaemonSet kube-system/kube-proxy", nil
	case status.UpdatedNumberScheduled < status.DesiredNumberScheduled:
		return false, fmt.Sprintf("Waiting for DaemonSet kube-system/kube-proxy to roll out: %d of %d Pods updated", status.UpdatedNumberScheduled, status.DesiredNumberScheduled), nil
	case status.NumberAvailable < status.DesiredNumberScheduled:
		return false, fmt.Sprintf("Waiting for DaemonSet kube-system/kube-proxy to roll out: %d of %d updated Pods available", status.NumberAvailable, status.DesiredNumberScheduled), nil
	}

	return true, "", nil
}

// getKubeProxy returns the kube-proxy DaemonSet and the index of its
// kube-proxy container (or of its only container).
func getKubeProxy(ctx context.Context, c client.Reader) (*appsv1.DaemonSet, int, error) {
	ds := &appsv1.DaemonSet{}
	key := client.ObjectKey{Namespace: kubeSystemNamespace, Name: kubeProxyName}

	if err := c.Get(ctx, key, ds); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, 0, fmt.Errorf("%w: DaemonSet %s does not exist", ErrKubeProxyNotFound, key)
		}

		return nil, 0, fmt.Errorf("getting DaemonSet %s: %w", key, err)
	}

	containers := ds.Spec.Template.Spec.Containers
	for i := range containers {
		if containers[i].Name == kubeProxyName {
			return ds, i, nil
		}
	}

	if len(containers) == 1 {
		return ds, 0, nil
	}

	return nil, 0, fmt.Errorf("%w: DaemonSet %s has no container %s", ErrKubeProxyNotFound, key, kubeProxyName)
}
