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

package talossimmachine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// workloadTimeout bounds every request to a workload cluster.
const workloadTimeout = 10 * time.Second

// workloadClients keeps one client per Cluster, built from its
// <cluster>-kubeconfig Secret, and builds a new one when the Secret changed
// (another UID or resource version).
type workloadClients struct {
	mu        sync.Mutex
	byCluster map[client.ObjectKey]workloadClient
}

// workloadClient is a client and the Secret version it was built from.
type workloadClient struct {
	uid             types.UID
	resourceVersion string
	client          client.Client
}

// get returns the client of the workload cluster of cluster, reading its
// kubeconfig Secret with reader; a missing Secret is a NotFound error.
func (w *workloadClients) get(ctx context.Context, reader client.Reader, cluster client.ObjectKey) (client.Client, error) {
	s, err := secret.GetFromNamespacedName(ctx, reader, cluster, secret.Kubeconfig)
	if err != nil {
		w.forget(cluster)

		return nil, err
	}

	w.mu.Lock()
	cached, ok := w.byCluster[cluster]
	w.mu.Unlock()

	if ok && cached.uid == s.UID && cached.resourceVersion == s.ResourceVersion {
		return cached.client, nil
	}

	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[secret.KubeconfigDataName])
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig in Secret %s/%s: %w", s.Namespace, s.Name, err)
	}

	cfg.Timeout = workloadTimeout
	cfg.QPS, cfg.Burst = 50, 100

	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client of the workload cluster of Cluster %s: %w", cluster, err)
	}

	w.mu.Lock()
	defer w.mu.Unlock()

	if w.byCluster == nil {
		w.byCluster = map[client.ObjectKey]workloadClient{}
	}

	w.byCluster[cluster] = workloadClient{uid: s.UID, resourceVersion: s.ResourceVersion, client: c}

	return c, nil
}

// forget drops the client of cluster.
func (w *workloadClients) forget(cluster client.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()

	delete(w.byCluster, cluster)
}
