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

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/inplace"
)

// MachineTemplates returns the templates of cluster's MachineDeployments
// and of its control plane, and the Talos each boots, as claims read it
// (inplace.Claims.TemplateDesired).
func (r Reader) MachineTemplates(ctx context.Context, cluster *clusterv1.Cluster, claims inplace.Claims) []disruption.MachineTemplate {
	templates := []disruption.MachineTemplate{}
	if ref := cluster.Spec.ControlPlaneRef; ref.IsDefined() {
		owner := fmt.Sprintf("%s %s", ref.Kind, ref.Name)
		cp, err := r.Get(ctx, ref.APIGroup, ref.Kind, cluster.Namespace, ref.Name)
		if err != nil {
			templates = append(templates, disruption.MachineTemplate{Owner: owner, Err: err})
		} else if group, kind, name, ok := ControlPlaneTemplate(cp); ok {
			t := r.machineTemplate(ctx, claims, owner, group, kind, cluster.Namespace, name)
			t.RefField = "its infrastructure template reference"
			templates = append(templates, t)
		}
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return append(templates, disruption.MachineTemplate{Owner: "MachineDeployments", Err: err})
	}
	for i := range mds.Items {
		md := &mds.Items[i]
		ref := md.Spec.Template.Spec.InfrastructureRef
		t := r.machineTemplate(ctx, claims, "MachineDeployment "+md.Name, ref.APIGroup, ref.Kind, md.Namespace, ref.Name)
		t.RefField = "spec.template.spec.infrastructureRef"
		templates = append(templates, t)
	}
	return templates
}

// machineTemplate reads one InfraMachine template and the Talos it names.
func (r Reader) machineTemplate(ctx context.Context, claims inplace.Claims, owner, group, kind, namespace, name string) disruption.MachineTemplate {
	t := disruption.MachineTemplate{Owner: owner, Ref: kind + " " + name}
	obj, err := r.Get(ctx, group, kind, namespace, name)
	if err != nil {
		t.Err = err
		return t
	}
	h, err := claims.TemplateDesired(obj.Object)
	if err != nil {
		t.Err = err
		return t
	}
	t.Image, t.Field, t.Version = h.Image, h.Field, h.Version
	return t
}
