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

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/internal/templates"
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

// reconcileTemplates reads the templates of the Cluster's new Machines, for
// the TemplatesOnTarget condition of a rollout whose target comes from its
// policy (CAPI-driven rollouts take their target from the templates). It
// never fails the reconcile: a template it cannot read is reported by the
// condition.
func (r *Reconciler) reconcileTemplates(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Upgrade.Spec.CAPIDriven() || r.Templates == nil {
		return ctrl.Result{}, nil
	}
	s.templates = r.templateReader().MachineTemplates(ctx, s.Cluster, r.Claims)
	return ctrl.Result{}, nil
}

// templateReader reads the objects of providers' kinds the Cluster names
// (templates, control planes) through r.Templates, remembering for a while
// the kinds no CRD serves (r.unknownKinds).
func (r *Reconciler) templateReader() templates.Reader {
	return templates.Reader{Client: r.Templates, Mapper: r.Client.RESTMapper(), Kinds: &r.unknownKinds, Now: r.Now}
}
