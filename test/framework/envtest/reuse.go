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

package envtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

// A workload control plane costs a kube-apiserver and an etcd to start
// (2 to 3s of CPU, 4 to 6s on a loaded 2-core machine) and to stop: a suite
// that gives each test a Cluster of its own spends more on starting them than
// on its tests. ReleaseWorkload empties a workload the test is done with back
// to what a fresh one holds, and keeps it for the next StartWorkload, as
// CAPI's own envtest suites share one control plane between their tests.
//
// Empty means: every object the kube-apiserver did not make itself at start
// (its baseline, by UID) is deleted, whatever its kind, CRDs and Namespaces
// included; finalizers are removed first, as nothing else runs there to
// honour them. What cannot be emptied within releaseTimeout is stopped
// instead, and the next StartWorkload starts a fresh one.

// releaseTimeout bounds the emptying of a released workload.
const releaseTimeout = time.Minute

// reuse is what a Workload needs to be emptied and reused.
type reuse struct {
	meta      metadata.Interface
	discovery discovery.DiscoveryInterface
	core      kubernetes.Interface
	// baseline are the UIDs of the objects the kube-apiserver made at
	// start: kept when the workload is emptied.
	baseline sets.Set[types.UID]
}

// newReuse reads the baseline of a control plane that just started.
func newReuse(ctx context.Context, cp *ControlPlane) (*reuse, error) {
	meta, err := metadata.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	r := &reuse{meta: meta, discovery: disc, core: core, baseline: sets.New[types.UID]()}
	objs, err := r.objects(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading what a fresh control plane holds: %w", err)
	}
	for _, o := range objs {
		r.baseline.Insert(o.UID)
	}
	return r, nil
}

// object is one object of a workload control plane.
type object struct {
	metav1.PartialObjectMetadata
	resource schema.GroupVersionResource
}

// objects lists every object of every resource that can be listed and
// deleted, read from discovery each time (a test may have added CRDs). The
// resources are listed at once: the first list of a custom resource of a
// kube-apiserver that just started waits about a second for its watch
// cache, and a management control plane has some thirty of them.
func (r *reuse) objects(ctx context.Context) ([]object, error) {
	lists, err := r.discovery.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovering the resources: %w", err)
	}
	var resources []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") || !slices.Contains(res.Verbs, "delete") {
				continue
			}
			resources = append(resources, gv.WithResource(res.Name))
		}
	}
	found := make([][]object, len(resources))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(listsAtOnce)
	for i, gvr := range resources {
		g.Go(func() error {
			items, err := r.meta.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
					return nil // A CRD deleted since discovery.
				}
				return fmt.Errorf("listing %s: %w", gvr, err)
			}
			for _, item := range items.Items {
				found[i] = append(found[i], object{PartialObjectMetadata: item, resource: gvr})
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

// listsAtOnce bounds the lists objects runs at once.
const listsAtOnce = 16

// empty deletes every object not in the baseline and waits until they are
// gone. The admission webhook configurations go first: the servers they call
// have stopped, and a webhook that fails closed would refuse the removal of a
// finalizer. A deletion that fails is made again at the next pass.
func (r *reuse) empty(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	var left []string
	var failed error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		objs, err := r.objects(ctx)
		if err != nil {
			return false, err
		}
		objs = slices.DeleteFunc(objs, func(o object) bool { return r.baseline.Has(o.UID) || ownedByAPIServer(o) })
		left, failed = left[:0], nil
		for _, o := range objs {
			left = append(left, fmt.Sprintf("%s %s/%s", o.resource.Resource, o.Namespace, o.Name))
		}
		if webhooks := slices.DeleteFunc(slices.Clone(objs), func(o object) bool { return !isWebhookConfiguration(o) }); len(webhooks) > 0 {
			objs = webhooks // The others at the next pass, once the apiserver calls none.
		}
		for _, o := range objs {
			if err := r.delete(ctx, o); err != nil {
				failed = err
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("emptying the control plane (left: %s): %w", strings.Join(left, ", "), errors.Join(err, failed))
	}
	return nil
}

// isWebhookConfiguration says whether o configures admission webhooks.
func isWebhookConfiguration(o object) bool {
	return o.resource.Group == "admissionregistration.k8s.io" &&
		(o.resource.Resource == "validatingwebhookconfigurations" || o.resource.Resource == "mutatingwebhookconfigurations")
}

// delete deletes o at once: without finalizers, with no grace period (no
// kubelet runs its Pods), and for a Namespace, finalized as the namespace
// controller, which does not run here, would once it is empty.
func (r *reuse) delete(ctx context.Context, o object) error {
	client := r.meta.Resource(o.resource).Namespace(o.Namespace)
	if len(o.Finalizers) > 0 {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := client.Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of %s %s/%s: %w", o.resource.Resource, o.Namespace, o.Name, err)
		}
	}
	if o.resource.Group == "" && o.resource.Resource == "namespaces" {
		ns, err := r.core.CoreV1().Namespaces().Get(ctx, o.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if ns.DeletionTimestamp != nil {
			if len(ns.Spec.Finalizers) > 0 {
				ns.Spec.Finalizers = nil
				if _, err := r.core.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return fmt.Errorf("finalizing Namespace %s: %w", o.Name, err)
				}
			}
			return nil
		}
	}
	if o.DeletionTimestamp != nil {
		return nil
	}
	background := metav1.DeletePropagationBackground
	err := client.Delete(ctx, o.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", o.resource.Resource, o.Namespace, o.Name, err)
	}
	return nil
}

// errNotReusable says that a workload was started without reuse.
var errNotReusable = errors.New("the workload control plane was not started for reuse")

// ReleaseWorkload ends the use of w, a workload control plane
// StartWorkload returned: emptied (see above), it serves the next
// StartWorkload of m; when it cannot be emptied it is stopped. Whatever still
// holds w's Config must be stopped first: a write that lands after the
// release is a leftover of this test in the next one. The kubeconfig Secret
// StartWorkload stored stays: delete it, or its Cluster, so that nothing in the
// management cluster reaches the workload the next test is given.
func (m *Management) ReleaseWorkload(ctx context.Context, w *Workload) error {
	if w.reuse == nil {
		return errNotReusable
	}
	if err := w.reuse.empty(ctx); err != nil {
		m.forget(w)
		return errors.Join(err, w.Stop())
	}
	m.mu.Lock()
	m.idle = append(m.idle, w)
	m.mu.Unlock()
	return nil
}

// reused returns an emptied workload control plane, or nil.
func (m *Management) reused() *Workload {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.idle) == 0 {
		return nil
	}
	w := m.idle[len(m.idle)-1]
	m.idle = m.idle[:len(m.idle)-1]
	return w
}

// forget removes w from the workloads Stop stops.
func (m *Management) forget(w *Workload) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workloads = slices.DeleteFunc(m.workloads, func(o *Workload) bool { return o == w })
}

// ownedByAPIServer says whether only the kube-apiserver wrote o: one of its
// own objects made after start (its identity Lease, a bootstrap object it
// keeps), which it would make again.
func ownedByAPIServer(o object) bool {
	if len(o.ManagedFields) == 0 {
		return false
	}
	for _, f := range o.ManagedFields {
		if !strings.HasPrefix(f.Manager, "kube-apiserver") {
			return false
		}
	}
	return true
}
