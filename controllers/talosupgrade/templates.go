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

package talosupgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "will a Machine CAPI creates now boot the target": the
// templates a Cluster's new Machines come from (its MachineDeployments' and
// its control plane's InfraMachine templates) name the Talos image they
// boot. A rollout driven by a policy changes the nodes, not the templates,
// which live in the users' Git: Tollgate never writes them, and says with the
// TemplatesOnTarget condition which ones to change.

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=*,verbs=get;list;watch

// machineTemplate is one template new Machines of the Cluster come from.
type machineTemplate struct {
	// owner is what creates Machines from it, for example
	// "MachineDeployment alpha-md-0".
	owner string
	// ref is the template's kind and name.
	ref string
	// image and version are the Talos image it names and the version that
	// image installs; err says why they could not be read.
	image, version string
	err            error
}

// reconcileTemplates reads the templates of the Cluster's new Machines, for
// the TemplatesOnTarget condition of a rollout whose target comes from its
// policy (CAPI-driven rollouts take their target from the templates). It
// never fails the reconcile: a template it cannot read is reported by the
// condition.
func (r *Reconciler) reconcileTemplates(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Upgrade.Spec.CAPIDriven() || r.Templates == nil {
		return ctrl.Result{}, nil
	}
	s.templates = r.readTemplates(ctx, s.Cluster)
	return ctrl.Result{}, nil
}

// readTemplates returns the templates of cluster's MachineDeployments and
// of its control plane, read through r.Templates.
func (r *Reconciler) readTemplates(ctx context.Context, cluster *clusterv1.Cluster) []machineTemplate {
	templates := []machineTemplate{}
	if ref := cluster.Spec.ControlPlaneRef; ref.IsDefined() {
		owner := fmt.Sprintf("%s %s", ref.Kind, ref.Name)
		cp, err := r.readUnstructured(ctx, ref.APIGroup, ref.Kind, cluster.Namespace, ref.Name)
		if err != nil {
			templates = append(templates, machineTemplate{owner: owner, err: err})
		} else if group, kind, name, ok := controlPlaneTemplate(cp); ok {
			templates = append(templates, r.readTemplate(ctx, owner, group, kind, cluster.Namespace, name))
		}
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Templates.List(ctx, mds, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return append(templates, machineTemplate{owner: "MachineDeployments", err: err})
	}
	for i := range mds.Items {
		md := &mds.Items[i]
		ref := md.Spec.Template.Spec.InfrastructureRef
		templates = append(templates, r.readTemplate(ctx, "MachineDeployment "+md.Name, ref.APIGroup, ref.Kind, md.Namespace, ref.Name))
	}
	return templates
}

// readTemplate reads one InfraMachine template and the Talos it names.
func (r *Reconciler) readTemplate(ctx context.Context, owner, group, kind, namespace, name string) machineTemplate {
	t := machineTemplate{owner: owner, ref: kind + " " + name}
	obj, err := r.readUnstructured(ctx, group, kind, namespace, name)
	if err != nil {
		t.err = err
		return t
	}
	h, err := r.Claims.TemplateDesired(obj.Object)
	if err != nil {
		t.err = err
		return t
	}
	t.image, t.version = h.Image, h.Version
	return t
}

// readUnstructured reads an object of group and kind, at the version the
// apiserver prefers, through r.Templates.
func (r *Reconciler) readUnstructured(ctx context.Context, group, kind, namespace, name string) (*unstructured.Unstructured, error) {
	mapping, err := r.unknownKinds.mapping(r.Client.RESTMapper(), schema.GroupKind{Group: group, Kind: kind}, r.Now())
	if err != nil {
		return nil, fmt.Errorf("finding the API of %s %s: %w", kind, name, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.Templates.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	return obj, nil
}

// controlPlaneTemplate returns the InfraMachine template a control plane
// makes its Machines from: spec.machineTemplate.spec.infrastructureRef in
// CAPI's v1beta2 contract, spec.machineTemplate.infrastructureRef in the
// v1beta1 one, spec.infrastructureTemplate in the Talos control-plane
// provider's v1alpha3.
func controlPlaneTemplate(cp *unstructured.Unstructured) (group, kind, name string, ok bool) {
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

// templatesCondition is the TemplatesOnTarget condition for templates and
// the rollout's target: True when every template boots the target, False
// naming those that boot another version and what to change, Unknown
// naming those whose Talos cannot be told.
func templatesCondition(target string, templates []machineTemplate) metav1.Condition {
	var drifted, unknown []string
	for _, t := range templates {
		switch {
		case t.err != nil:
			unknown = append(unknown, fmt.Sprintf("%s: %v", t.owner, t.err))
		case !talos.SameVersion(t.version, target):
			drifted = append(drifted, fmt.Sprintf("%s creates Machines from %s, which boots %s (%s): point it at a template whose image installs %s",
				t.owner, t.ref, t.version, t.image, target))
		}
	}
	slices.Sort(drifted)
	slices.Sort(unknown)
	switch {
	case len(drifted) > 0:
		return metav1.Condition{Type: upgradev1.TemplatesOnTargetCondition, Status: metav1.ConditionFalse, Reason: upgradev1.TemplatesDriftedReason,
			Message: "new Machines (a scale-up, a remediation) boot another version than " + target + " and are upgraded once more; Tollgate does not change templates: " + strings.Join(drifted, "; ")}
	case len(unknown) > 0:
		return metav1.Condition{Type: upgradev1.TemplatesOnTargetCondition, Status: metav1.ConditionUnknown, Reason: upgradev1.TemplatesUnknownReason,
			Message: "cannot tell which Talos new Machines boot: " + strings.Join(unknown, "; ")}
	}
	return metav1.Condition{Type: upgradev1.TemplatesOnTargetCondition, Status: metav1.ConditionTrue, Reason: upgradev1.TemplatesOnTargetReason}
}

// unknownKindTTL is how long a kind the RESTMapper did not know is not
// asked about again.
const unknownKindTTL = time.Minute

// kindCache remembers for a while the kinds the RESTMapper did not know. A
// lookup of a kind no CRD serves asks the apiserver's discovery again every
// time: for a fleet whose Clusters name a provider that is not installed
// (yet), that would be a discovery request or two in every reconcile of
// every rollout, which a restart over 1,000 Clusters paid with a minute of
// client-side throttling. A kind installed later is found within
// unknownKindTTL.
type kindCache struct {
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
func (c *kindCache) mapping(mapper meta.RESTMapper, gk schema.GroupKind, now time.Time) (*meta.RESTMapping, error) {
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
