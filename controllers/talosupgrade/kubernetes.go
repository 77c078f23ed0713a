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
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "how does a Kubernetes version change pass the gate".
// A rollout with spec.kubernetesVersion plans its path with the Talos
// version (path.go, planVersions): a hop that changes Kubernetes is two
// hops, its control plane first (stage KubernetesControlPlane: the
// components of each control-plane node, one at a time, then kube-proxy),
// then every node (stage Nodes: its kubelet, with its Talos version when
// that changes too). On a node, a Kubernetes change is a change of the
// images of its machine configuration, which Talos applies without a
// reboot: the kind configure applies it with the template's patches (or
// install stages it before its install: one drain and one reboot), and the
// node is proven by what runs, its static Pods or its Node's kubelet
// version (kubernetesProven).

// controlPlaneRecheck is how often a kubelet change CAPI handed over reads
// the control plane's kube-apiservers again while one is older: their
// mirror Pods are read live, not watched.
const controlPlaneRecheck = 10 * time.Second

// controlPlaneAhead says why st, a kubelet change CAPI handed over, may not
// start yet: a kube-apiserver of the Cluster runs an older version (CAPI
// asks a MachineDeployment's version without regard to the control plane's
// unless a topology sequences them). "" when every one runs the version or
// newer, and for every other record: a rollout with its own Kubernetes
// target moves the control plane first by its path. The answer is read
// once per version and reconcile (behind).
func (r *Reconciler) controlPlaneAhead(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, behind map[string]string) string {
	k := st.Kubernetes
	if !s.Upgrade.Spec.CAPIDriven() || k == nil || k.Part != upgradev1.KubernetesPartKubelet || k.State == upgradev1.MachineConfigConverged {
		return ""
	}
	if msg, ok := behind[k.Version]; ok {
		return msg
	}
	var nodes []string
	for _, m := range s.Machines {
		if disruption.IsControlPlane(m) && m.Status.NodeRef.IsDefined() {
			nodes = append(nodes, m.Status.NodeRef.Name)
		}
	}
	slices.Sort(nodes)
	msg := ""
	live, err := r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(s.Cluster))
	if err == nil {
		var ok bool
		ok, msg, err = kubernetes.APIServersAtLeast(ctx, live, nodes, k.Version)
		if ok {
			msg = ""
		}
	}
	if err != nil {
		msg = fmt.Sprintf("waiting to read the control plane's kube-apiserver versions: %v", err)
	}
	if msg != "" {
		msg = fmt.Sprintf("kubelet %s waits for the control plane: %s", k.Version, msg)
	}
	behind[k.Version] = msg
	return msg
}

// readKubernetes reads from the workload cluster whether st's node runs its
// Kubernetes change: the static Pods of its control-plane components Ready
// on the version (read live: a rollout does not cache the workload's Pods),
// or its Node's kubelet version.
func (r *Reconciler) readKubernetes(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, node *corev1.Node) disruption.KubernetesRead {
	k := st.Kubernetes
	if k.Part == upgradev1.KubernetesPartKubelet {
		ok, msg := kubernetes.KubeletAt(node, k.Version)
		return disruption.KubernetesRead{Proven: ok, Message: msg}
	}
	live, err := r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(s.Cluster))
	if err != nil {
		return disruption.KubernetesRead{Err: err}
	}
	ok, msg, err := kubernetes.StaticPodsReady(ctx, live, st.Node, k.Version)
	return disruption.KubernetesRead{Proven: ok, Message: msg, Err: err}
}

// recordMachineVersion sets the spec.version of a Machine whose node's
// kubelet now runs its record's version, as CAPI's own in-place update
// does: the Machine says what its node runs. A TalosControlPlane, which
// asks for the same version (KubernetesVersions), then sees it up to date;
// CAPI judges a MachineDeployment's Machines by their MachineSet's
// template, which an OnDelete rollout leaves as it was.
func (r *Reconciler) recordMachineVersion(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus) error {
	k := st.Kubernetes
	m := s.Machines[st.Machine]
	if k == nil || k.Part != upgradev1.KubernetesPartKubelet || k.State != upgradev1.MachineConfigConverged || m == nil || talos.SameVersion(m.Spec.Version, k.Version) {
		return nil
	}
	version, err := talos.CanonicalVersion(k.Version)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.Version = version
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("setting spec.version of Machine %s to %s: %w", m.Name, version, err)
	}
	ctrl.LoggerFrom(ctx).Info("Machine's spec.version set to what its node runs", "Machine", m.Name, "version", version)
	return nil
}

// kubeProxyPoll is how often a hop waits for kube-proxy to roll out: the
// rollout does not watch the workload's DaemonSets.
const kubeProxyPoll = 2 * time.Second

// reconcileKubeProxy brings the kube-proxy DaemonSet of the workload
// cluster, when it runs one, to the version of a KubernetesControlPlane hop
// whose control-plane nodes all completed it: it must not be newer than any
// apiserver, and the kubelets wait for it. It returns a message while the
// DaemonSet rolls out.
func (r *Reconciler) reconcileKubeProxy(ctx context.Context, s *scope, version string) (string, error) {
	if s.workload == nil {
		return "waiting for the workload cluster to be reachable to roll out kube-proxy", nil
	}
	changed, err := kubernetes.UpdateKubeProxy(ctx, s.workload, version)
	if errors.Is(err, kubernetes.ErrKubeProxyNotFound) {
		return "", nil // The Cluster runs no kube-proxy (a CNI replaces it).
	}
	if err != nil {
		return "", fmt.Errorf("updating kube-proxy to %s: %w", version, err)
	}
	if changed {
		r.event(s, corev1.EventTypeNormal, "KubeProxyUpdated", "Kubernetes", "kube-proxy's image set to %s", version)
	}
	ok, msg, err := kubernetes.KubeProxyRolledOut(ctx, s.workload, version)
	if err != nil {
		return "", err
	}
	if !ok {
		return msg, nil
	}
	return "", nil
}

// reconcileKubernetesVersions sets scope.kubernetesVersions, the
// KubernetesVersions condition of a rollout with a Kubernetes target: the
// Cluster's CAPI objects must ask for the target, and must not replace
// their Machines for it, before any node's Kubernetes changes (see
// startGate). Tollgate never writes them: they live in the users' Git.
func (r *Reconciler) reconcileKubernetesVersions(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Upgrade.Spec.KubernetesVersion == "" || s.Cluster == nil {
		return ctrl.Result{}, nil
	}
	c := r.kubernetesVersionsCondition(ctx, s)
	s.KubernetesVersions = &c
	if c.Status == metav1.ConditionUnknown {
		return ctrl.Result{RequeueAfter: inPlaceRecheck}, nil
	}
	return ctrl.Result{}, nil
}

// kubernetesVersionsCondition returns the KubernetesVersions condition of
// s's Cluster, from its CAPI objects (disruption.KubernetesVersionsCondition).
func (r *Reconciler) kubernetesVersionsCondition(ctx context.Context, s *scope) metav1.Condition {
	o := disruption.KubernetesObjects{Cluster: s.Cluster}
	if ref := s.Cluster.Spec.ControlPlaneRef; ref.IsDefined() && ref.Kind == machineconfig.TalosControlPlaneKind {
		var err error
		if o.ControlPlane, err = r.templateReader().Get(ctx, ref.APIGroup, ref.Kind, s.Cluster.Namespace, ref.Name); err != nil {
			o.Err = fmt.Errorf("cannot read %s %s: %w", ref.Kind, ref.Name, err)
		}
	}
	if o.Err == nil {
		mds := &clusterv1.MachineDeploymentList{}
		if err := r.Client.List(ctx, mds, client.InNamespace(s.Cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.Cluster.Name}); err != nil {
			o.Err = fmt.Errorf("cannot list the MachineDeployments: %w", err)
		}
		o.MachineDeployments = mds.Items
	}
	return disruption.KubernetesVersionsCondition(s.Upgrade.Spec.KubernetesVersion, o)
}

// setKubernetesVersionsCondition sets KubernetesVersions from what this
// reconcile read, and removes it from a rollout without a Kubernetes
// target.
func setKubernetesVersionsCondition(u *upgradev1.TalosUpgrade, s *scope) {
	switch {
	case u.Spec.KubernetesVersion == "":
		conditions.Delete(u, upgradev1.KubernetesVersionsCondition)
	case s.KubernetesVersions != nil:
		c := *s.KubernetesVersions
		c.Message = upgradev1.Truncate(c.Message, maxTemplatesMessageLength)
		c.ObservedGeneration = u.Generation
		conditions.Set(u, c)
	}
}
