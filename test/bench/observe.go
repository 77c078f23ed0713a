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

package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// observer watches the TalosUpgrades and Clusters (their metadata) of a
// namespace in the bench's own informers, with its own credentials, not
// through the proxy: the bench reads the fleet's progress each second
// without costing the apiserver a list of the fleet each time, and without
// counting as the controller's requests.
type observer struct {
	cache  cache.Cache
	cancel context.CancelFunc
}

// observe starts the informers of namespace ns and waits for them.
func observe(ctx context.Context, cfg *rest.Config, ns string) (*observer, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: envtest.NewScheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, fmt.Errorf("creating the bench's informers: %w", err)
	}
	if _, err := c.GetInformer(ctx, &upgradev1.TalosUpgrade{}); err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, clusterMetadata()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() { _ = c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.New("the bench's informers did not sync")
	}
	return &observer{cache: c, cancel: cancel}, nil
}

func (o *observer) stop() { o.cancel() }

func clusterMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
	return m
}

// rolloutCounts are the rollouts of a namespace at one instant.
type rolloutCounts struct {
	// Total TalosUpgrades, Completed and Failed of them.
	Total, Completed, Failed int
	// FirstFailed names the first Failed one, with why.
	FirstFailed string
	// Admitted counts the rollouts admitted (AdmittedAnnotation) and not
	// finished: the ones maxClustersInProgress bounds.
	Admitted int
}

// rollouts counts the rollouts.
func (o *observer) rollouts(ctx context.Context) (rolloutCounts, error) {
	list := &upgradev1.TalosUpgradeList{}
	if err := o.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return rolloutCounts{}, err
	}
	return countRollouts(list.Items), nil
}

func countRollouts(ups []upgradev1.TalosUpgrade) rolloutCounts {
	n := rolloutCounts{Total: len(ups)}
	for i := range ups {
		u := &ups[i]
		switch u.Status.Phase {
		case upgradev1.UpgradePhaseCompleted:
			n.Completed++
		case upgradev1.UpgradePhaseFailed:
			n.Failed++
			if n.FirstFailed == "" {
				n.FirstFailed = fmt.Sprintf("%s: %s", u.Name, u.Status.BlockedBy)
			}
		}
		if u.Annotations[upgradev1.AdmittedAnnotation] != "" && !u.Finished() {
			n.Admitted++
		}
	}
	return n
}

// connectionsAsked counts the Clusters that carry the workload connection
// annotation.
func (o *observer) connectionsAsked(ctx context.Context) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("ClusterList"))
	if err := o.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[upgradev1.WorkloadConnectionAnnotation]; ok {
			n++
		}
	}
	return n, nil
}

// waitForRollouts waits until the namespace's TalosUpgrades number
// clusters and are all Completed, failing on the first Failed one and as
// soon as exited (Controller.Exited) says a controller is gone; progress
// is called every 30s.
func (o *observer) waitForRollouts(ctx context.Context, clusters int, timeout time.Duration, exited func() error, progress func(rolloutCounts)) error {
	lastLog := time.Now()
	return waitFor(ctx, timeout, func() (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		n, err := o.rollouts(ctx)
		if err != nil {
			return false, err
		}
		if n.Failed > 0 {
			return false, fmt.Errorf("the rollout of %s failed", n.FirstFailed)
		}
		if time.Since(lastLog) > 30*time.Second {
			progress(n)
			lastLog = time.Now()
		}
		return n.Total == clusters && n.Completed == clusters, nil
	})
}
