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

package talossim

import (
	"context"
	"slices"
	"strings"
	"time"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
)

// The control-plane components whose static Pods a control-plane node
// runs, by the names of their Pods and of Faults.StaticPodNeverReady.
const (
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
)

// DefaultStaticPodStartDelay is how long a static Pod takes to become Ready
// after it (re)starts, and the kubelet to report its new version after it
// restarts, unless Options.StaticPodStartDelay says otherwise.
const DefaultStaticPodStartDelay = 200 * time.Millisecond

// Kubelet is what the kubelet of a node reports to the workload cluster,
// as the node's machine configuration decides it.
type Kubelet struct {
	// Version is the kubelet's version, the tag of machine.kubelet.image
	// ("v1.35.2"), once the kubelet runs that image.
	Version string
	// StaticPods are the control-plane static Pods of a control-plane node
	// (kube-apiserver, kube-controller-manager, kube-scheduler, in that
	// order); none on a worker.
	StaticPods []StaticPod
	// KubeProxyImage is cluster.proxy.image of a control-plane node, the
	// image of the kube-proxy DaemonSet Talos creates from its bootstrap
	// manifests; "" on a worker or when kube-proxy is disabled.
	KubeProxyImage string
}

// StaticPod is one static Pod as its mirror Pod shows it.
type StaticPod struct {
	// Component is the control-plane component, such as ComponentAPIServer.
	Component string
	// Image is the image the Pod runs, from the machine configuration.
	Image string
	// Ready is whether the Pod's container runs and is ready.
	Ready bool
}

// KubeletReporter is the optional part of a NodeUpdater that is told what
// the kubelet of a node reports: its version and static Pods, whenever the
// node's machine configuration or a boot changes them and when they settle.
// It is told only about the nodes whose configuration decides it: those
// added with a MachineConfig or a KubernetesVersion (NodeConfig).
// KubeNodeUpdater implements it.
type KubeletReporter interface {
	// KubeletChanged is called with what the kubelet of the node called
	// name reports now.
	KubeletChanged(ctx context.Context, name string, kubelet Kubelet) error
}

// Kubelet returns what the node's kubelet reports now (generating the
// node's machine configuration if it has none yet).
func (n *Node) Kubelet() (Kubelet, error) {
	if err := n.ensureConfig(); err != nil {
		return Kubelet{}, err
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	return n.kubelet.clone(), nil
}

func (k Kubelet) clone() Kubelet {
	k.StaticPods = slices.Clone(k.StaticPods)

	return k
}

// imageTag is the tag of an image reference, "" without one.
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}

	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}

	return image[i+1:]
}

// settledKubelet is what the kubelet reports once cfg runs and its Pods
// started: every static Pod Ready unless faults say otherwise.
func settledKubelet(cfg talosconfig.Provider, controlPlane bool, faults Faults) Kubelet {
	k := Kubelet{Version: imageTag(cfg.Machine().Kubelet().Image())}

	if !controlPlane || cfg.Cluster() == nil {
		return k
	}

	for _, p := range []StaticPod{
		{Component: ComponentAPIServer, Image: cfg.Cluster().APIServer().Image()},
		{Component: ComponentControllerManager, Image: cfg.Cluster().ControllerManager().Image()},
		{Component: ComponentScheduler, Image: cfg.Cluster().Scheduler().Image()},
	} {
		p.Ready = !slices.Contains(faults.StaticPodNeverReady, p.Component)
		k.StaticPods = append(k.StaticPods, p)
	}

	if cfg.Cluster().Proxy().Enabled() {
		k.KubeProxyImage = cfg.Cluster().Proxy().Image()
	}

	return k
}

// setActiveLocked makes cfg the configuration the node runs, as machined
// does without a reboot: the COSI resource changes, the kubelet restarts on
// a new image (its version reported once it runs) and a static Pod whose
// image changed restarts NotReady, Ready after the start delay.
func (n *Node) setActiveLocked(cfg talosconfig.Provider) {
	n.active = cfg
	n.publishConfigLocked()

	want := settledKubelet(cfg, n.controlPlane, n.faults)
	now := Kubelet{Version: n.kubelet.Version, KubeProxyImage: want.KubeProxyImage}
	restarts := want.Version != n.kubelet.Version

	for _, p := range want.StaticPods {
		i := slices.IndexFunc(n.kubelet.StaticPods, func(old StaticPod) bool { return old.Component == p.Component })
		if i >= 0 && n.kubelet.StaticPods[i].Image == p.Image {
			now.StaticPods = append(now.StaticPods, n.kubelet.StaticPods[i])

			continue
		}

		p.Ready = false
		now.StaticPods = append(now.StaticPods, p)
		restarts = true
	}

	n.kubelet = now
	if restarts {
		n.settleKubeletLocked()
	}

	n.sim.after(0, n.reportKubelet)
}

// bootConfigLocked is what a boot does to the configuration: the node runs
// the persistent configuration (a staged one takes effect, a try ends),
// its kubelet runs it at once and every static Pod starts NotReady.
func (n *Node) bootConfigLocked() {
	n.tryGen++

	if n.persistent == nil {
		return
	}

	n.active = n.persistent
	n.kubelet = settledKubelet(n.active, n.controlPlane, n.faults)

	for i := range n.kubelet.StaticPods {
		n.kubelet.StaticPods[i].Ready = false
	}

	n.settleKubeletLocked()
}

// settleKubeletLocked makes the kubelet report the active configuration
// settled after the start delay, unless another change comes first.
func (n *Node) settleKubeletLocked() {
	n.kubeletGen++
	gen := n.kubeletGen

	n.sim.after(n.sim.staticPodStartDelay(), func() {
		n.mu.Lock()
		if n.kubeletGen != gen || n.active == nil || !n.up {
			n.mu.Unlock()

			return
		}

		n.kubelet = settledKubelet(n.active, n.controlPlane, n.faults)
		n.mu.Unlock()

		n.reportKubelet()
	})
}

// ReportKubelet tells the NodeUpdater, if it is a KubeletReporter, what the
// node's kubelet reports now, as a kubelet does when it starts: for a world
// whose Nodes come from elsewhere (an infrastructure provider), which learns
// of a node's static Pods only from a change or a boot otherwise.
func (n *Node) ReportKubelet() {
	n.sim.after(0, n.reportKubelet)
}

// reportKubelet tells the NodeUpdater, if it is a KubeletReporter, what the
// kubelet reports now; reports are made one at a time, each with the state
// of its moment.
func (n *Node) reportKubelet() {
	if !n.reportsKubernetes {
		return
	}

	reporter, ok := n.sim.opts.NodeUpdater.(KubeletReporter)
	if !ok {
		return
	}

	n.reportMu.Lock()
	defer n.reportMu.Unlock()

	n.mu.Lock()
	kubelet, up := n.kubelet.clone(), n.up
	n.mu.Unlock()

	if !up {
		return
	}

	n.sim.notify(func(ctx context.Context, _ NodeUpdater) error { return reporter.KubeletChanged(ctx, n.name, kubelet) })
}
