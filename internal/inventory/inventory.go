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

package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// Reader reads what Clusters and their Machines run.
type Reader interface {
	// ClustersOfPolicy returns the versions of the Clusters of namespace
	// whose policy label (upgradev1.PolicyLabel) names policy, sorted by
	// name.
	ClustersOfPolicy(ctx context.Context, namespace, policy string) ([]plan.ClusterVersions, error)
	// Cluster returns the versions of cluster, as given (the object under
	// admission, say), and of its Machines.
	Cluster(ctx context.Context, cluster *clusterv1.Cluster) (plan.ClusterVersions, error)
}

var errNotSynced = errors.New("the inventory of Clusters and Machines has not synced")

// Inventory is a Reader fed by the informers of a cache; see the package
// documentation. It is safe for concurrent use.
type Inventory struct {
	mu sync.Mutex
	// clusters are the Clusters and the Machines filed under them, by the
	// Cluster's key; an entry exists for a Machine whose Cluster is not
	// seen yet.
	clusters map[client.ObjectKey]*entry
	// policies are the names of the Clusters of each policy, by the key
	// namespace/policy.
	policies map[client.ObjectKey]sets.Set[string]
	// machineClusters is the Cluster each Machine is filed under, by the
	// Machine's key.
	machineClusters map[client.ObjectKey]string
	// synced report whether the event handlers have seen every object the
	// informers listed at their start.
	synced []toolscache.InformerSynced
}

// entry is what the inventory knows of one Cluster.
type entry struct {
	// cluster is the cache's Cluster; nil until it is seen.
	cluster *clusterv1.Cluster
	// machines are the cache's Machines of the Cluster, by name.
	machines map[string]*clusterv1.Machine
	// versions are the versions of cluster and machines; nil when one of
	// them changed since they were made.
	versions *plan.ClusterVersions
}

var _ Reader = &Inventory{}

// New returns an empty Inventory; Watch feeds it.
func New() *Inventory {
	return &Inventory{
		clusters:        map[client.ObjectKey]*entry{},
		policies:        map[client.ObjectKey]sets.Set[string]{},
		machineClusters: map[client.ObjectKey]string{},
	}
}

// Watch feeds the inventory from the informers of Clusters and Machines of
// informers, a manager's cache (mgr.GetCache()). Call it before the cache
// starts, or once it runs.
func (i *Inventory) Watch(ctx context.Context, informers cache.Informers) error {
	for _, w := range []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandlerFuncs
	}{
		{obj: &clusterv1.Cluster{}, handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { i.setCluster(obj) },
			UpdateFunc: func(_, obj any) { i.setCluster(obj) },
			DeleteFunc: i.deleteCluster,
		}},
		{obj: &clusterv1.Machine{}, handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { i.setMachine(obj) },
			UpdateFunc: func(_, obj any) { i.setMachine(obj) },
			DeleteFunc: i.deleteMachine,
		}},
	} {
		informer, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("getting the informer of %T: %w", w.obj, err)
		}
		reg, err := informer.AddEventHandler(w.handler)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		i.mu.Lock()
		i.synced = append(i.synced, reg.HasSynced)
		i.mu.Unlock()
	}
	return nil
}

// waitForSync waits until the event handlers have seen what the informers
// listed at their start, as a read of the cache waits for its informer.
func (i *Inventory) waitForSync(ctx context.Context) error {
	i.mu.Lock()
	synced := slices.Clone(i.synced)
	i.mu.Unlock()
	if len(synced) == 0 {
		return fmt.Errorf("%w: it watches no informer", errNotSynced)
	}
	for _, s := range synced {
		if !s() {
			if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
				return fmt.Errorf("%w: %w", errNotSynced, ctx.Err())
			}
			break
		}
	}
	return nil
}

// ClustersOfPolicy returns the versions of the Clusters of namespace whose
// policy label names policy, sorted by name. They are shared: never change
// them.
func (i *Inventory) ClustersOfPolicy(ctx context.Context, namespace, policy string) ([]plan.ClusterVersions, error) {
	if err := i.waitForSync(ctx); err != nil {
		return nil, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	names := sets.List(i.policies[client.ObjectKey{Namespace: namespace, Name: policy}])
	out := make([]plan.ClusterVersions, 0, len(names))
	for _, name := range names {
		e := i.clusters[client.ObjectKey{Namespace: namespace, Name: name}]
		if e.versions == nil {
			v := plan.NewClusterVersions(e.cluster, e.machineList())
			e.versions = &v
		}
		out = append(out, *e.versions)
	}
	return out, nil
}

// Cluster returns the versions of cluster, as given, and of the Machines the
// inventory has of it.
func (i *Inventory) Cluster(ctx context.Context, cluster *clusterv1.Cluster) (plan.ClusterVersions, error) {
	if err := i.waitForSync(ctx); err != nil {
		return plan.ClusterVersions{}, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	var machines []*clusterv1.Machine
	if e, ok := i.clusters[client.ObjectKeyFromObject(cluster)]; ok {
		machines = e.machineList()
	}
	return plan.NewClusterVersions(cluster, machines), nil
}

// machineList returns the Machines of an entry.
func (e *entry) machineList() []*clusterv1.Machine {
	out := make([]*clusterv1.Machine, 0, len(e.machines))
	for _, m := range e.machines {
		out = append(out, m)
	}
	return out
}

// setCluster records a Cluster as the informer has it now.
func (i *Inventory) setCluster(obj any) {
	c, ok := obj.(*clusterv1.Cluster)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(c)
	i.mu.Lock()
	defer i.mu.Unlock()
	e := i.entry(key)
	if e.cluster != nil {
		i.removePolicy(key, e.cluster.Labels[upgradev1.PolicyLabel])
	}
	e.cluster, e.versions = c, nil
	if policy := c.Labels[upgradev1.PolicyLabel]; policy != "" {
		pkey := client.ObjectKey{Namespace: key.Namespace, Name: policy}
		if i.policies[pkey] == nil {
			i.policies[pkey] = sets.New[string]()
		}
		i.policies[pkey].Insert(key.Name)
	}
}

// deleteCluster forgets a Cluster; its Machines stay filed under its name
// until they go too.
func (i *Inventory) deleteCluster(obj any) {
	key, ok := deletedKey(obj)
	if !ok {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	e, ok := i.clusters[key]
	if !ok || e.cluster == nil {
		return
	}
	i.removePolicy(key, e.cluster.Labels[upgradev1.PolicyLabel])
	e.cluster, e.versions = nil, nil
	i.forgetIfEmpty(key, e)
}

// setMachine records a Machine as the informer has it now, under the
// Cluster its spec.clusterName names.
func (i *Inventory) setMachine(obj any) {
	m, ok := obj.(*clusterv1.Machine)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(m)
	i.mu.Lock()
	defer i.mu.Unlock()
	if previous, ok := i.machineClusters[key]; ok && previous != m.Spec.ClusterName {
		i.removeMachine(key, previous)
	}
	if m.Spec.ClusterName == "" {
		return
	}
	e := i.entry(client.ObjectKey{Namespace: key.Namespace, Name: m.Spec.ClusterName})
	e.machines[key.Name], e.versions = m, nil
	i.machineClusters[key] = m.Spec.ClusterName
}

// deleteMachine forgets a Machine.
func (i *Inventory) deleteMachine(obj any) {
	key, ok := deletedKey(obj)
	if !ok {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if cluster, ok := i.machineClusters[key]; ok {
		i.removeMachine(key, cluster)
	}
}

// entry returns the entry of a Cluster, made when missing. i.mu is held.
func (i *Inventory) entry(key client.ObjectKey) *entry {
	e, ok := i.clusters[key]
	if !ok {
		e = &entry{machines: map[string]*clusterv1.Machine{}}
		i.clusters[key] = e
	}
	return e
}

// removeMachine takes a Machine out of the entry of cluster. i.mu is held.
func (i *Inventory) removeMachine(key client.ObjectKey, cluster string) {
	delete(i.machineClusters, key)
	ckey := client.ObjectKey{Namespace: key.Namespace, Name: cluster}
	if e, ok := i.clusters[ckey]; ok {
		delete(e.machines, key.Name)
		e.versions = nil
		i.forgetIfEmpty(ckey, e)
	}
}

// removePolicy takes a Cluster out of the Clusters of a policy. i.mu is
// held.
func (i *Inventory) removePolicy(cluster client.ObjectKey, policy string) {
	if policy == "" {
		return
	}
	pkey := client.ObjectKey{Namespace: cluster.Namespace, Name: policy}
	if names, ok := i.policies[pkey]; ok {
		names.Delete(cluster.Name)
		if names.Len() == 0 {
			delete(i.policies, pkey)
		}
	}
}

// forgetIfEmpty drops the entry of a Cluster that is gone and has no
// Machine left. i.mu is held.
func (i *Inventory) forgetIfEmpty(key client.ObjectKey, e *entry) {
	if e.cluster == nil && len(e.machines) == 0 {
		delete(i.clusters, key)
	}
}

// deletedKey returns the key of a deleted object, or of the object a
// deletion tombstone stands for.
func deletedKey(obj any) (client.ObjectKey, bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		ns, name, err := toolscache.SplitMetaNamespaceKey(tombstone.Key)
		return client.ObjectKey{Namespace: ns, Name: name}, err == nil
	}
	o, ok := obj.(client.Object)
	if !ok {
		return client.ObjectKey{}, false
	}
	return client.ObjectKeyFromObject(o), true
}
