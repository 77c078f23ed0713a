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

package templates

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader reads the objects of providers' kinds, which are known by their
// group and kind only (CAPI's v1beta2 references name no version).
type Reader struct {
	// Client reads the objects: the manager's cache, which keeps informers
	// of the few templates of a fleet.
	Client client.Reader
	// Mapper finds the version of a kind the apiserver prefers.
	Mapper meta.RESTMapper
	// Kinds remembers the kinds the Mapper did not know, across reads; nil
	// remembers none.
	Kinds *KindCache
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Get reads an object of group and kind, at the version the apiserver
// prefers, through r.Client.
func (r Reader) Get(ctx context.Context, group, kind, namespace, name string) (*unstructured.Unstructured, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	kinds := r.Kinds
	if kinds == nil {
		kinds = &KindCache{}
	}
	mapping, err := kinds.mapping(r.Mapper, schema.GroupKind{Group: group, Kind: kind}, now())
	if err != nil {
		return nil, fmt.Errorf("finding the API of %s %s: %w", kind, name, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	return obj, nil
}

// ControlPlaneTemplate returns the InfraMachine template a control plane
// makes its Machines from: spec.machineTemplate.spec.infrastructureRef in
// CAPI's v1beta2 contract, spec.machineTemplate.infrastructureRef in the
// v1beta1 one, spec.infrastructureTemplate in the Talos control-plane
// provider's v1alpha3.
func ControlPlaneTemplate(cp *unstructured.Unstructured) (group, kind, name string, ok bool) {
	for _, path := range [][]string{
		{"spec", "machineTemplate", "spec", "infrastructureRef"},
		{"spec", "machineTemplate", "infrastructureRef"},
		{"spec", "infrastructureTemplate"},
	} {
		ref, found, err := unstructured.NestedStringMap(cp.Object, path...)
		if err != nil || !found || ref["kind"] == "" || ref["name"] == "" {
			continue
		}
		group = ref["apiGroup"]
		if group == "" {
			if gv, err := schema.ParseGroupVersion(ref["apiVersion"]); err == nil {
				group = gv.Group
			}
		}
		return group, ref["kind"], ref["name"], true
	}
	return "", "", "", false
}

// unknownKindTTL is how long a kind the RESTMapper did not know is not
// asked about again.
const unknownKindTTL = time.Minute

// KindCache remembers for a while the kinds the RESTMapper did not know. A
// lookup of a kind no CRD serves asks the apiserver's discovery again every
// time: for a fleet whose Clusters name a provider that is not installed
// (yet), that would be a discovery request or two in every reconcile of
// every rollout, which a restart over 1,000 Clusters paid with a minute of
// client-side throttling. A kind installed later is found within
// unknownKindTTL.
type KindCache struct {
	mu      sync.Mutex
	unknown map[schema.GroupKind]unknownKind
}

// unknownKind is why a kind was not found, and until when that is kept.
type unknownKind struct {
	err   error
	until time.Time
}

// mapping returns mapper's REST mapping of gk, or the error it gave for gk
// less than unknownKindTTL before now.
func (c *KindCache) mapping(mapper meta.RESTMapper, gk schema.GroupKind, now time.Time) (*meta.RESTMapping, error) {
	c.mu.Lock()
	u, known := c.unknown[gk]
	c.mu.Unlock()
	if known && now.Before(u.until) {
		return nil, u.err
	}
	m, err := mapper.RESTMapping(gk)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case meta.IsNoMatchError(err):
		if c.unknown == nil {
			c.unknown = map[schema.GroupKind]unknownKind{}
		}
		c.unknown[gk] = unknownKind{err: err, until: now.Add(unknownKindTTL)}
	case err == nil:
		delete(c.unknown, gk)
	}
	return m, err
}
