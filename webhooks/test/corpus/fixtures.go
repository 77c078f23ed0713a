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

package corpus

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// Namespace is the namespace of every object of a case; a runner may move a
// case to a namespace of its own.
const Namespace = "fleet"

// ControllerUsername is the username a case uses for requests made by the
// Tollgate controller.
const ControllerUsername = "system:serviceaccount:tollgate-system:tollgate-controller-manager"

// SchematicID is a well-formed Image Factory schematic ID.
const SchematicID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

// Case is one admission request and what must come of it.
type Case struct {
	// Name describes the case.
	Name string
	// World are the objects that exist before the request, created in order.
	// The status of Machines and TalosUpgrades is written after creation.
	World []client.Object
	// Object is the object to create or, when World holds an object of the
	// same kind and name, the new state of that object.
	Object client.Object
	// Username is the requesting user; "" is an administrator.
	Username string

	// Field is the path of the field the refusal names; "" for a case that
	// must be admitted.
	Field string
	// Message is a part of the refusal's message.
	Message string
	// Schema is a part of the message when the CRD schema (OpenAPI or CEL)
	// refuses the object before the webhook sees it; "" when the webhook
	// refuses it.
	Schema string
	// Warning is a part of an admission warning the request must get.
	Warning string
}

// Policy returns a valid TalosUpgradePolicy to v1.13.0 from ghcr, changed by
// mutate.
func Policy(name string, mutate ...func(*upgradev1.TalosUpgradePolicy)) *upgradev1.TalosUpgradePolicy {
	p := &upgradev1.TalosUpgradePolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: upgradev1.GroupVersion.String(), Kind: "TalosUpgradePolicy"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
		}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// Upgrade returns a valid TalosUpgrade of cluster from policy, to v1.13.0
// from ghcr, changed by mutate.
func Upgrade(name, cluster, policy string, mutate ...func(*upgradev1.TalosUpgrade)) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{
		TypeMeta:   metav1.TypeMeta{APIVersion: upgradev1.GroupVersion.String(), Kind: "TalosUpgrade"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: upgradev1.TalosUpgradeSpec{
			ClusterName: cluster,
			PolicyName:  policy,
			UpgradePlan: upgradev1.UpgradePlan{
				TalosVersion: "v1.13.0",
				Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
			},
		},
	}
	for _, m := range mutate {
		m(u)
	}
	return u
}

// InPhase sets the phase of a TalosUpgrade.
func InPhase(phase upgradev1.UpgradePhase) func(*upgradev1.TalosUpgrade) {
	return func(u *upgradev1.TalosUpgrade) { u.Status.Phase = phase }
}

// Ended sets the phase a TalosUpgrade ended in, as the controller does: the
// generation it saw with it is the one created (the apiserver's first
// generation is 1).
func Ended(phase upgradev1.UpgradePhase) func(*upgradev1.TalosUpgrade) {
	return func(u *upgradev1.TalosUpgrade) {
		u.Generation = 1
		u.Status.Phase, u.Status.ObservedGeneration = phase, 1
	}
}

// HealthCheck returns a valid ClusterHealthCheck running a Ceph status
// check, changed by mutate.
func HealthCheck(name string, mutate ...func(*upgradev1.ClusterHealthCheck)) *upgradev1.ClusterHealthCheck {
	c := &upgradev1.ClusterHealthCheck{
		TypeMeta:   metav1.TypeMeta{APIVersion: upgradev1.GroupVersion.String(), Kind: "ClusterHealthCheck"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: JobTemplate("rook-ceph", "quay.io/ceph/ceph:v19", "ceph", "health"),
			Interval: &metav1.Duration{Duration: 30_000_000_000},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// JobTemplate returns a Job template running command in image.
func JobTemplate(namespace, image string, command ...string) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:      corev1.RestartPolicyNever,
				ServiceAccountName: "tollgate-hooks",
				Containers:         []corev1.Container{{Name: "run", Image: image, Command: command}},
			}},
		},
	}
}

// Cluster returns a Cluster that selects policy ("" for none).
func Cluster(name, policy string) *clusterv1.Cluster {
	if policy == "" {
		return builder.Cluster(Namespace, name)
	}
	return builder.Cluster(Namespace, name, builder.WithPolicy(policy))
}

// Machines returns n Machines of cluster on Talos version talos; control
// planes when controlPlane is true.
func Machines(cluster, prefix string, n int, controlPlane bool, talos string) []client.Object {
	out := make([]client.Object, 0, n)
	for i := range n {
		opts := []builder.MachineOption{builder.WithTalosVersion(talos)}
		if controlPlane {
			opts = append(opts, builder.WithControlPlane())
		} else {
			opts = append(opts, builder.WithMachineDeployment(cluster+"-md-0"))
		}
		out = append(out, builder.Machine(Namespace, cluster+"-"+prefix+"-"+string(rune('a'+i)), cluster, opts...))
	}
	return out
}

// DeclaringDeployment returns MachineDeployment name of cluster whose
// template declares Talos version (upgradev1.DesiredTalosVersionAnnotation).
func DeclaringDeployment(cluster, name, version string) *clusterv1.MachineDeployment {
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: cluster,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: name}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{
					Labels:      map[string]string{clusterv1.MachineDeploymentNameLabel: name},
					Annotations: map[string]string{upgradev1.DesiredTalosVersionAnnotation: version},
				},
				Spec: clusterv1.MachineSpec{
					ClusterName:       cluster,
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "TalosSimMachineTemplate", Name: name},
				},
			},
		},
	}
}

// HACluster returns a Cluster selecting policy with three control-plane
// Machines and two workers on Talos version talos.
func HACluster(name, policy, talos string) []client.Object {
	objs := []client.Object{Cluster(name, policy)}
	objs = append(objs, Machines(name, "cp", 3, true, talos)...)
	return append(objs, Machines(name, "w", 2, false, talos)...)
}

// withKubernetes sets the Kubernetes version of Machines.
func withKubernetes(version string, objs []client.Object) []client.Object {
	for _, o := range objs {
		if m, ok := o.(*clusterv1.Machine); ok {
			m.Spec.Version = version
			m.Status.NodeInfo.KubeletVersion = version
		}
	}
	return objs
}

// concat joins object lists.
func concat(lists ...[]client.Object) []client.Object {
	var out []client.Object
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// intOrString returns a pointer to an IntOrString.
func intOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }
