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

package sandbox

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// ClusterReadyTimeout bounds how long CreateCluster waits, with
// Options.CAPI, for CAPI to have made every Machine of a Cluster and found
// its Node. It is long: a loaded 2-core machine made six Clusters of a
// soak in more than 3 minutes (a CI run at load 28), and CreateCluster
// fails at once when CAPI core is gone, so that only a real hang waits it
// out.
const ClusterReadyTimeout = 10 * time.Minute

// Role is what a Machine is in its Cluster.
type Role string

// Roles of a Machine.
const (
	// RoleControlPlane is a control-plane Machine (labelled
	// cluster.x-k8s.io/control-plane).
	RoleControlPlane Role = "control plane"
	// RoleWorker is any other Machine.
	RoleWorker Role = "worker"
)

// ControlPlaneName is the name of the TalosControlPlane of a Cluster made
// with Options.CAPI, and of its TalosSimMachineTemplate, as in
// templates/cluster-template-talos.yaml.
func ControlPlaneName(cluster string) string { return cluster + "-control-plane" }

// WorkersName is the name of the workers' MachineDeployment of a Cluster
// made with Options.CAPI, and of its first TalosSimMachineTemplate and its
// TalosConfigTemplate.
func WorkersName(cluster string) string { return cluster + "-md-0" }

// unsupportedWithCAPI names the ClusterOptions set in o that CreateCluster
// refuses with Options.CAPI: they shape Machines, nodes and Nodes, which
// CAPI and the providers make there.
func unsupportedWithCAPI(o ClusterOptions) []string {
	var fields []string
	for name, set := range map[string]bool{
		"Simulator": o.Simulator != nil, "RebootDuration": o.RebootDuration != 0, "Schematics": o.Schematics != nil,
		"WithoutTalos": o.WithoutTalos, "Talosconfig": o.Talosconfig != nil,
		"MachineOptions": o.MachineOptions != nil, "NodeOptions": o.NodeOptions != nil,
	} {
		if set {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	return fields
}

// createCAPICluster creates a Cluster the way a user does with CAPI: a
// workload control plane (its kubeconfig Secret, as a control-plane
// provider would write it) and the talosconfig Secret of its simulator,
// then the objects of templates/cluster-template-talos.yaml; CAPI core and
// the providers make the Machines, and it waits until every one runs with
// its Node. A shared Workload, a Kubeconfig through a proxy, Secret and
// OnCall are honoured as without CAPI; the nodes' stand-in kubelets then
// report to the workload apiserver directly (see clusterHooks).
func (s *Sandbox) createCAPICluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if fields := unsupportedWithCAPI(o); len(fields) > 0 {
		return nil, fmt.Errorf("ClusterOptions %s of %s/%s are not supported with Options.CAPI: CAPI and the providers make the Machines, their nodes and Nodes", strings.Join(fields, ", "), o.Namespace, o.Name)
	}
	if o.OnCall != nil && s.opts.Hosts != nil {
		return nil, fmt.Errorf("ClusterOptions.OnCall of %s/%s is not supported with Options.Hosts: the shared machines report their calls to the sandbox that made the hosts", o.Namespace, o.Name)
	}
	if err := s.capiAlive(); err != nil {
		return nil, fmt.Errorf("creating Cluster %s/%s: %w", o.Namespace, o.Name, err)
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = builder.DefaultKubernetesVersion
	}
	start := time.Now()
	c := &Cluster{Namespace: o.Namespace, Name: o.Name, Workload: o.Workload, sb: s}
	if c.Workload == nil {
		var err error
		if c.Workload, err = s.StartWorkload(ctx, o.Namespace, o.Name, WorkloadOptions{}); err != nil {
			return nil, err
		}
		c.ownWorkload = true
	}
	workload := c.Workload
	s.mu.Lock()
	s.clusters = append(s.clusters, c)
	s.mu.Unlock()
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	var err error
	if c.Simulator, err = s.providers.hosts.Simulator(key); err != nil {
		return nil, err
	}
	var kubelet client.Client
	if o.Kubeconfig != nil {
		kubelet = workload.Client
	}
	s.providers.hooks.set(key, c.Simulator, o.OnCall, kubelet)
	if err := s.storeKubeconfig(ctx, c, o); err != nil {
		return nil, err
	}
	secret, err := c.Simulator.TalosConfigSecret(o.Namespace, o.Name)
	if err != nil {
		return nil, fmt.Errorf("building the talosconfig of %s: %w", key, err)
	}
	if o.Secret != nil {
		o.Secret(secret)
	}
	if o.InPlaceUpdates {
		if err := s.labelNamespace(ctx, o.Namespace); err != nil {
			return nil, err
		}
	}
	objects, err := s.clusterObjects(o, workload)
	if err != nil {
		return nil, err
	}
	for _, obj := range append([]client.Object{secret}, objects...) {
		if err := s.Management.Client.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	if c.Fixture, err = s.waitForMachines(ctx, c, o); err != nil {
		return nil, err
	}
	s.logf("Created Cluster %s/%s as a user does (TalosControlPlane %s, MachineDeployment %s): CAPI made %d control-plane and %d worker Machines on Talos %s, each booted by the infrastructure provider and given its Node, in %s",
		o.Namespace, o.Name, ControlPlaneName(o.Name), WorkersName(o.Name), o.ControlPlanes, o.Workers, o.TalosVersion, since(start))
	return c, nil
}

// clusterObjects returns the objects of templates/cluster-template-talos.yaml
// for o, with the test provider's kinds: a Cluster whose control plane is a
// TalosControlPlane of o.ControlPlanes replicas and whose workers are a
// MachineDeployment of o.Workers replicas, each with a TalosSimMachineTemplate
// that boots o.TalosVersion from the sandbox's installer repository, and a
// TalosSimCluster whose endpoint is the workload apiserver.
func (s *Sandbox) clusterObjects(o ClusterOptions, w *Workload) ([]client.Object, error) {
	endpoint, err := url.Parse(w.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the workload apiserver's address %q: %w", w.Config.Host, err)
	}
	port, err := strconv.Atoi(endpoint.Port())
	if err != nil {
		return nil, fmt.Errorf("parsing the workload apiserver's port %q: %w", w.Config.Host, err)
	}
	v, err := semver.NewVersion(o.TalosVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing the Talos version %q of %s/%s: %w", o.TalosVersion, o.Namespace, o.Name, err)
	}
	// The machine configuration is generated for the Talos minor version,
	// as the template's TALOS_VERSION says.
	configVersion := fmt.Sprintf("v%d.%d", v.Major(), v.Minor())
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: o.Namespace, Name: name} }
	cp, md := ControlPlaneName(o.Name), WorkersName(o.Name)

	cluster := &clusterv1.Cluster{
		ObjectMeta: meta(o.Name),
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}},
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimCluster", Name: o.Name},
			ControlPlaneRef:   clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "TalosControlPlane", Name: cp},
		},
	}
	for _, opt := range o.ClusterOptions {
		opt(cluster)
	}
	tcp := &controlplanev1.TalosControlPlane{
		ObjectMeta: meta(cp),
		Spec: controlplanev1.TalosControlPlaneSpec{
			Replicas: ptr.To(int32(o.ControlPlanes)), //nolint:gosec // A handful of Machines.
			Version:  o.KubernetesVersion,
			InfrastructureTemplate: corev1.ObjectReference{
				APIVersion: infrav1.GroupVersion.String(), Kind: "TalosSimMachineTemplate", Name: cp,
			},
			ControlPlaneConfig: controlplanev1.ControlPlaneConfig{
				ControlPlaneConfig: bootstrapv1.TalosConfigSpec{GenerateType: "controlplane", TalosVersion: configVersion},
			},
		},
	}
	if o.ControlPlane != nil {
		o.ControlPlane(tcp)
	}
	workers := &clusterv1.MachineDeployment{
		ObjectMeta: meta(md),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: o.Name,
			Replicas:    ptr.To(int32(o.Workers)), //nolint:gosec // A handful of Machines.
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{}},
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: o.Name,
				Version:     o.KubernetesVersion,
				Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: bootstrapv1.GroupVersion.Group, Kind: "TalosConfigTemplate", Name: md,
				}},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimMachineTemplate", Name: md,
				},
			}},
			// An in-place update takes its Machine down within
			// maxUnavailable; CAPI makes no Machine to make room.
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			}},
		},
	}
	if o.MachineDeployment != nil {
		o.MachineDeployment(workers)
	}
	return []client.Object{
		cluster,
		&infrav1.TalosSimCluster{
			ObjectMeta: meta(o.Name),
			Spec:       infrav1.TalosSimClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: endpoint.Hostname(), Port: int32(port)}}, //nolint:gosec // A TCP port.
		},
		s.machineTemplate(o.Namespace, cp, o.TalosVersion),
		tcp,
		s.machineTemplate(o.Namespace, md, o.TalosVersion),
		&bootstrapv1.TalosConfigTemplate{
			ObjectMeta: meta(md),
			Spec: bootstrapv1.TalosConfigTemplateSpec{Template: bootstrapv1.TalosConfigTemplateResource{Spec: bootstrapv1.TalosConfigSpec{
				GenerateType: "worker", TalosVersion: configVersion,
			}}},
		},
		workers,
	}, nil
}

// machineTemplate is a TalosSimMachineTemplate whose machines boot the
// installer of version from the sandbox's registry: the repository of
// Policy's installer, from which Tollgate takes the images CAPI asks for.
func (s *Sandbox) machineTemplate(namespace, name, version string) *infrav1.TalosSimMachineTemplate {
	return &infrav1.TalosSimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: infrav1.TalosSimMachineTemplateSpec{Template: infrav1.TalosSimMachineTemplateResource{Spec: infrav1.TalosSimMachineSpec{
			Image: s.InstallerRepository() + ":" + version,
		}}},
	}
}

// waitForMachines waits until CAPI has made every Machine of o and each
// runs o.TalosVersion with its Node, as CAPI reports them (phase Running,
// nodeRef, nodeInfo), and returns them with the Cluster and the Nodes. It
// fails at once when CAPI core or the providers are gone.
func (s *Sandbox) waitForMachines(ctx context.Context, c *Cluster, o ClusterOptions) (*builder.Fixture, error) {
	ctx, cancel := context.WithTimeout(ctx, ClusterReadyTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	want := o.ControlPlanes + o.Workers
	for {
		if err := s.capiAlive(); err != nil {
			return nil, fmt.Errorf("waiting for the Machines of Cluster %s/%s: %w", c.Namespace, c.Name, err)
		}
		machines, err := c.machines(ctx)
		if err == nil && len(machines) == want && allRunning(machines, o.TalosVersion) {
			return c.fixture(ctx, machines)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster %s/%s: CAPI did not make %d Machines running Talos %s with their Node within %s (%w): %s",
				c.Namespace, c.Name, want, o.TalosVersion, ClusterReadyTimeout, ctx.Err(), describeMachines(machines, err))
		case <-tick.C: // Polling the apiserver for the whole Cluster's state.
		}
	}
}

// allRunning says whether every Machine is Running with its Node on version.
func allRunning(machines []clusterv1.Machine, version string) bool {
	for _, m := range machines {
		if m.Status.Phase != string(clusterv1.MachinePhaseRunning) || !m.Status.NodeRef.IsDefined() ||
			m.Status.NodeInfo == nil || m.Status.NodeInfo.OSImage != talossim.OSImage(version) {
			return false
		}
	}
	return true
}

// describeMachines says where each Machine is, for an error.
func describeMachines(machines []clusterv1.Machine, err error) string {
	if err != nil {
		return err.Error()
	}
	if len(machines) == 0 {
		return "no Machine yet"
	}
	var b strings.Builder
	for _, m := range machines {
		fmt.Fprintf(&b, "\nMachine %s: phase %q, node %q", m.Name, m.Status.Phase, m.Status.NodeRef.Name)
		for _, cond := range m.Status.Conditions {
			if cond.Status != metav1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, "; %s: %s", cond.Type, cond.Message)
			}
		}
	}
	return b.String()
}

// fixture reads the Cluster and the Nodes of machines.
func (c *Cluster) fixture(ctx context.Context, machines []clusterv1.Machine) (*builder.Fixture, error) {
	f := &builder.Fixture{Cluster: &clusterv1.Cluster{}}
	if err := c.sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, f.Cluster); err != nil {
		return nil, fmt.Errorf("reading Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range machines {
		f.Machines = append(f.Machines, &machines[i])
		node := &corev1.Node{}
		if err := c.Workload.Client.Get(ctx, client.ObjectKey{Name: machines[i].Status.NodeRef.Name}, node); err != nil {
			return nil, fmt.Errorf("reading the Node of Machine %s/%s: %w", c.Namespace, machines[i].Name, err)
		}
		f.Nodes = append(f.Nodes, node)
	}
	return f, nil
}

// machines lists the Cluster's Machines, control plane first, each role by
// name.
func (c *Cluster) machines(ctx context.Context) ([]clusterv1.Machine, error) {
	list := &clusterv1.MachineList{}
	if err := c.sb.Management.Client.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the Machines of Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	slices.SortFunc(list.Items, func(a, b clusterv1.Machine) int {
		if ra, rb := roleOf(&a), roleOf(&b); ra != rb {
			return map[bool]int{true: -1, false: 1}[ra == RoleControlPlane]
		}
		return strings.Compare(a.Name, b.Name)
	})
	return list.Items, nil
}

// roleOf returns the role of m.
func roleOf(m *clusterv1.Machine) Role {
	if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
		return RoleControlPlane
	}
	return RoleWorker
}

// MachineNames returns the names of the Cluster's Machines of role, sorted,
// as they are now. With Options.CAPI, CAPI and the control-plane provider
// name them (<cluster>-control-plane-<random> and
// <cluster>-md-0-<random>-<random>), and each names its node and Node;
// otherwise the sandbox names them <cluster>-cp-<i> and <cluster>-worker-<i>.
func (c *Cluster) MachineNames(ctx context.Context, role Role) ([]string, error) {
	machines, err := c.machines(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range machines {
		if roleOf(&machines[i]) == role {
			names = append(names, machines[i].Name)
		}
	}
	return names, nil
}

// SetWorkersTalosVersion does what a user's Git change does to move the
// workers of a Cluster made with Options.CAPI to another Talos: it creates a
// TalosSimMachineTemplate that boots version (named
// <cluster>-md-0-<version>) and points the MachineDeployment at it. CAPI
// then replaces the workers or, when Tollgate is its in-place update
// extension (Options.Extension, ClusterOptions.InPlaceUpdates), hands them
// to Tollgate. It returns the new template's name.
func (c *Cluster) SetWorkersTalosVersion(ctx context.Context, version string) (string, error) {
	mgmt := c.sb.Management.Client
	md := &clusterv1.MachineDeployment{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: WorkersName(c.Name)}, md); err != nil {
		return "", fmt.Errorf("reading the MachineDeployment of Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	template := c.sb.machineTemplate(c.Namespace, WorkersName(c.Name)+"-"+strings.ReplaceAll(version, ".", "-"), version)
	if err := mgmt.Create(ctx, template); err != nil {
		return "", fmt.Errorf("creating TalosSimMachineTemplate %s/%s: %w", template.Namespace, template.Name, err)
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.InfrastructureRef.Name = template.Name
	if err := mgmt.Patch(ctx, md, patch); err != nil {
		return "", fmt.Errorf("pointing MachineDeployment %s/%s at TalosSimMachineTemplate %s: %w", md.Namespace, md.Name, template.Name, err)
	}
	return template.Name, nil
}

// labelNamespace opts namespace in to Tollgate's in-place update extension
// (upgradev1.InPlaceUpdatesNamespaceLabel).
func (s *Sandbox) labelNamespace(ctx context.Context, namespace string) error {
	mgmt := s.Management.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := mgmt.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil {
		return fmt.Errorf("reading Namespace %s: %w", namespace, err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[upgradev1.InPlaceUpdatesNamespaceLabel] = upgradev1.InPlaceUpdatesEnabled
	if err := mgmt.Patch(ctx, ns, patch); err != nil {
		return fmt.Errorf("labelling Namespace %s with %s=%s: %w", namespace, upgradev1.InPlaceUpdatesNamespaceLabel, upgradev1.InPlaceUpdatesEnabled, err)
	}
	return nil
}
