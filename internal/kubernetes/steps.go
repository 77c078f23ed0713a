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

package kubernetes

import "fmt"

// Step is one step of a node-level Kubernetes upgrade to one version: a
// part of the upgrade on one node, or the kube-proxy DaemonSet.
type Step struct {
	// Part is what the step changes.
	Part Part
	// Node is the name of the node the step changes, "" for
	// PartKubeProxy.
	Node string
	// Version is the Kubernetes version the step moves to.
	Version string
}

// String describes the step: "ControlPlane cp-1 v1.36.0".
func (s Step) String() string {
	if s.Node == "" {
		return fmt.Sprintf("%s %s", s.Part, s.Version)
	}

	return fmt.Sprintf("%s %s %s", s.Part, s.Node, s.Version)
}

// Steps returns the steps that move a Cluster to Kubernetes version, one
// minor at most from what it runs (talos.CheckKubernetesStep), in the order
// Kubernetes' version skew policy needs:
//
//  1. PartControlPlane on each control-plane node, one at a time, in the
//     order given: the kube-apiserver goes first (the controller-manager
//     and scheduler of a Talos node talk to their own node's apiserver
//     only, so they may move with it).
//  2. PartKubeProxy, when the Cluster runs kube-proxy: it must not be
//     newer than any apiserver, so it waits for all of them.
//  3. PartKubelet on each control-plane node, then on each worker. A
//     kubelet must not be newer than any apiserver it may reach, and
//     through KubePrism or the control-plane endpoint a kubelet reaches
//     every one of them: a control-plane node's kubelet therefore waits
//     for every control-plane node's apiserver, and does not move in the
//     same step as its components (talosctl upgrade-k8s orders them the
//     same way). The workers' kubelet steps are independent of each other:
//     the engine runs them within the disruption budget.
//
// Each step is done when its check says so (see Part); a step whose
// ImagePatches changes nothing is already done. The next does not start
// before, and a control-plane step that is never done stops the upgrade
// before the workers.
func Steps(version string, controlPlane, workers []string, kubeProxy bool) []Step {
	steps := make([]Step, 0, 2*len(controlPlane)+len(workers)+1)

	for _, node := range controlPlane {
		steps = append(steps, Step{Part: PartControlPlane, Node: node, Version: version})
	}

	if kubeProxy {
		steps = append(steps, Step{Part: PartKubeProxy, Version: version})
	}

	for _, node := range controlPlane {
		steps = append(steps, Step{Part: PartKubelet, Node: node, Version: version})
	}

	for _, node := range workers {
		steps = append(steps, Step{Part: PartKubelet, Node: node, Version: version})
	}

	return steps
}
