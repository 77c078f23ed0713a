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

package disruption

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// KubernetesObjects are the CAPI objects of a Cluster that say which
// Kubernetes version its new Machines are made on, as read for its
// KubernetesVersions condition.
type KubernetesObjects struct {
	// Cluster is the Cluster: its topology's version, its control plane.
	Cluster *clusterv1.Cluster
	// ControlPlane is the Cluster's control plane when it is a
	// TalosControlPlane; nil otherwise.
	ControlPlane *unstructured.Unstructured
	// MachineDeployments are the Cluster's MachineDeployments.
	MachineDeployments []clusterv1.MachineDeployment
	// Err says what could not be read; the condition is Unknown then.
	Err error
}

// KubernetesVersionsCondition is the KubernetesVersions condition of a
// rollout to Kubernetes target: True when the Cluster's CAPI objects ask
// for the target and replace no Machine for it, else False naming which
// object and field to change (Tollgate never writes them: they live in the
// users' Git).
func KubernetesVersionsCondition(target string, o KubernetesObjects) metav1.Condition {
	cond := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: upgradev1.KubernetesVersionsCondition, Status: status, Reason: reason, Message: message}
	}
	var disagree, replaces []string
	asks := func(what, field, version string) {
		if !talos.SameVersion(version, target) {
			disagree = append(disagree, fmt.Sprintf("%s asks for %s in %s: set it to %s", what, cmp.Or(version, "no version"), field, target))
		}
	}
	if o.Err != nil {
		return cond(metav1.ConditionUnknown, upgradev1.KubernetesVersionsUnknownReason, o.Err.Error())
	}
	if t := o.Cluster.Spec.Topology; t.IsDefined() {
		asks("Cluster "+o.Cluster.Name, "spec.topology.version", t.Version)
	}
	if ref := o.Cluster.Spec.ControlPlaneRef; ref.IsDefined() {
		what := ref.Kind + " " + ref.Name
		if ref.Kind != machineconfig.TalosControlPlaneKind {
			replaces = append(replaces, fmt.Sprintf("%s: its provider replaces the control-plane Machines for a new version; Tollgate upgrades in place only the control plane of a TalosControlPlane that rolls out OnDelete", what))
		} else if o.ControlPlane != nil {
			version, _, _ := unstructured.NestedString(o.ControlPlane.Object, "spec", "version")
			asks(what, "spec.version", version)
			if strategy, _, _ := unstructured.NestedString(o.ControlPlane.Object, "spec", "rolloutStrategy", "type"); strategy != machineconfig.OnDelete {
				replaces = append(replaces, fmt.Sprintf("%s rolls out %s, which replaces every control-plane Machine for a new spec.version: set spec.rolloutStrategy.type: OnDelete", what, cmp.Or(strategy, "RollingUpdate")))
			}
		}
	}
	mds := slices.Clone(o.MachineDeployments)
	slices.SortFunc(mds, func(a, b clusterv1.MachineDeployment) int { return strings.Compare(a.Name, b.Name) })
	for i := range mds {
		md := &mds[i]
		what := "MachineDeployment " + md.Name
		asks(what, "spec.template.spec.version", md.Spec.Template.Spec.Version)
		if strategy := md.Spec.Rollout.Strategy.Type; strategy != clusterv1.OnDeleteMachineDeploymentStrategyType {
			replaces = append(replaces, fmt.Sprintf("%s rolls out %s, which replaces its Machines for a new spec.template.spec.version: set spec.rollout.strategy.type: OnDelete", what, cmp.Or(string(strategy), "RollingUpdate")))
		}
	}
	switch {
	case len(replaces) > 0:
		msg := "CAPI would replace Machines that Tollgate upgrades to Kubernetes " + target + " in place: " + strings.Join(replaces, "; ")
		if len(disagree) > 0 {
			msg += "; and the Cluster's CAPI objects must ask for Kubernetes " + target + ": " + strings.Join(disagree, "; ")
		}
		return cond(metav1.ConditionFalse, upgradev1.KubernetesReplacesMachinesReason, msg)
	case len(disagree) > 0:
		return cond(metav1.ConditionFalse, upgradev1.KubernetesVersionsDisagreeReason,
			"the Cluster's CAPI objects must ask for Kubernetes "+target+", so that new Machines are made on it: "+strings.Join(disagree, "; "))
	}
	return cond(metav1.ConditionTrue, upgradev1.KubernetesVersionsAgreeReason, "the Cluster's CAPI objects ask for Kubernetes "+target+" and replace no Machine for it")
}
