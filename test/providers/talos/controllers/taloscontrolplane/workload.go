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

package taloscontrolplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeconfigSecretSuffix is appended to a Cluster's name to name the
// Secret of its kubeconfig, as CAPI names it.
const kubeconfigSecretSuffix = "-kubeconfig"

// deleteNode deletes the workload Node of a Machine being removed, as
// CACPPT v0.5.x's scaleDownControlPlane does right after it deleted the
// Machine, and again at every scale-down while the Machine is not gone
// (deleteNode in controllers/scale.go). A Node already gone is no error.
func (r *Reconciler) deleteNode(ctx context.Context, s *scope, machine *clusterv1.Machine) (ctrl.Result, error) {
	if !machine.Status.NodeRef.IsDefined() {
		return ctrl.Result{}, nil
	}

	workload, err := r.workloadClient(ctx, s.cluster)
	if err != nil {
		return ctrl.Result{RequeueAfter: waitAfter}, err
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: machine.Status.NodeRef.Name}}
	if err := workload.Delete(ctx, node); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}

		return ctrl.Result{RequeueAfter: waitAfter}, fmt.Errorf("deleting Node %s of Machine %s: %w", node.Name, klog.KObj(machine), err)
	}

	ctrl.LoggerFrom(ctx).Info("Deleted the Node of a removed control-plane Machine", "Machine", klog.KObj(machine), "Node", node.Name)

	return ctrl.Result{}, nil
}

// workloadClient returns a client of the Cluster's workload cluster, from
// its <cluster>-kubeconfig Secret.
func (r *Reconciler) workloadClient(ctx context.Context, cluster *clusterv1.Cluster) (client.Client, error) {
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Name + kubeconfigSecretSuffix}

	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig Secret %s: %w", key, err)
	}

	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["value"])
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of Secret %s: %w", key, err)
	}

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating a client of the workload cluster of Cluster %s: %w", klog.KObj(cluster), err)
	}

	return c, nil
}
