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

package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	kubedrain "k8s.io/kubectl/pkg/drain"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// maxListedPods is how many Pods a message names before "and N more".
const maxListedPods = 5

// Cordon marks node unschedulable. A Node already cordoned is left alone.
func Cordon(ctx context.Context, cs kubernetes.Interface, node string) error {
	return setUnschedulable(ctx, cs, node, true)
}

// Uncordon marks node schedulable again. A Node already schedulable is left
// alone.
func Uncordon(ctx context.Context, cs kubernetes.Interface, node string) error {
	return setUnschedulable(ctx, cs, node, false)
}

// The patches of spec.unschedulable, as kubectl cordon and uncordon send
// them (false is spec.unschedulable left out).
var (
	cordonPatch   = []byte(`{"spec":{"unschedulable":true}}`)
	uncordonPatch = []byte(`{"spec":{"unschedulable":null}}`)
)

// setUnschedulable patches spec.unschedulable of a Node in one request, not
// read first: a Node already as desired is a patch that changes nothing,
// which the apiserver does not write.
func setUnschedulable(ctx context.Context, cs kubernetes.Interface, name string, desired bool) error {
	patch := uncordonPatch
	if desired {
		patch = cordonPatch
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting Node %q unschedulable=%t: %w", name, desired, err)
	}
	return nil
}

// Result is where a drain stands.
type Result struct {
	// Done is true when no Pod that must go is left on the Node: the
	// DaemonSet and mirror Pods the DrainSpec leaves in place do not count.
	Done bool

	// Message says what the drain waits for when it is not done, for
	// example `blocked by PodDisruptionBudget "default/web": default/web-0`.
	Message string
}

// Drain moves the drain of node one step on without waiting: it evicts (or
// deletes, when spec.respectPodDisruptionBudgets is false) every Pod of the
// Node that must go, once, and reports what is left. A PodDisruptionBudget
// that refuses an eviction is not an error: it is named in Result.Message,
// and the eviction is tried again on the next call. When the DrainSpec
// forbids evicting some Pod (an unmanaged Pod, a Pod with emptyDir data, or
// a DaemonSet Pod the spec does not ignore), nothing is evicted and
// Result.Message says what to change. Errors are returned for failures the
// caller should retry with backoff, along with the Result so far.
func Drain(ctx context.Context, cs kubernetes.Interface, node string, spec upgradev1.DrainSpec) (Result, error) {
	helper := newHelper(ctx, cs, spec)
	list, errs := helper.GetPodsForDeletion(node)
	if list == nil {
		return Result{}, fmt.Errorf("listing Pods of Node %q: %w", node, kerrors.NewAggregate(errs))
	}
	if len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, err := range errs {
			msgs = append(msgs, flagHints.Replace(err.Error()))
		}
		slices.Sort(msgs)
		return Result{Message: "cannot drain Node: " + strings.Join(msgs, "; ")}, nil
	}

	log := ctrl.LoggerFrom(ctx)
	var (
		terminating, evicted []string
		blocked              = map[string][]string{}
		failures             []error
	)
	for _, pod := range list.Pods() {
		name := pod.Namespace + "/" + pod.Name
		if pod.DeletionTimestamp != nil {
			terminating = append(terminating, name)
			continue
		}
		var err error
		if spec.RespectPodDisruptionBudgets == nil || *spec.RespectPodDisruptionBudgets {
			err = helper.EvictPod(pod, policyv1.SchemeGroupVersion)
		} else {
			err = helper.DeletePod(pod)
		}
		switch {
		case err == nil:
			log.V(4).Info("Evicted Pod", "Pod", klog.KObj(&pod), "Node", klog.KRef("", node))
			evicted = append(evicted, name)
		case apierrors.IsNotFound(err):
			// Gone already.
		case apierrors.IsTooManyRequests(err):
			pdb := disruptionBudget(err, pod.Namespace)
			blocked[pdb] = append(blocked[pdb], name)
		default:
			failures = append(failures, fmt.Errorf("evicting Pod %s: %w", name, err))
		}
	}

	if len(terminating) == 0 && len(evicted) == 0 && len(blocked) == 0 && len(failures) == 0 {
		return Result{Done: true}, nil
	}
	var parts []string
	for _, pdb := range slices.Sorted(maps.Keys(blocked)) {
		parts = append(parts, fmt.Sprintf("blocked by %s: %s", pdb, listPods(blocked[pdb])))
	}
	if n := len(evicted) + len(terminating); n > 0 {
		parts = append(parts, fmt.Sprintf("waiting for %d Pods to terminate: %s", n, listPods(append(terminating, evicted...))))
	}
	if len(failures) > 0 {
		parts = append(parts, fmt.Sprintf("%d evictions failed", len(failures)))
	}
	return Result{Message: strings.Join(parts, "; ")}, kerrors.NewAggregate(failures)
}

// newHelper returns kubectl's drain helper configured by spec, with the
// defaults of the API for unset fields.
func newHelper(ctx context.Context, cs kubernetes.Interface, spec upgradev1.DrainSpec) *kubedrain.Helper {
	return &kubedrain.Helper{
		Ctx:                 ctx,
		Client:              cs,
		Force:               boolOr(spec.EvictUnmanagedPods, false),
		GracePeriodSeconds:  -1, // The Pod's own terminationGracePeriodSeconds.
		IgnoreAllDaemonSets: boolOr(spec.IgnoreDaemonSets, true),
		DeleteEmptyDirData:  boolOr(spec.DeleteEmptyDirData, true),
		DisableEviction:     !boolOr(spec.RespectPodDisruptionBudgets, true),
		Out:                 io.Discard,
		ErrOut:              io.Discard,
	}
}

// flagHints turns kubectl's flag hints into the DrainSpec fields to set.
var flagHints = strings.NewReplacer(
	"use --ignore-daemonsets to ignore", "set drain.ignoreDaemonSets to leave them in place",
	"use --delete-emptydir-data to override", "set drain.deleteEmptyDirData to evict them",
	"use --force to override", "set drain.evictUnmanagedPods to evict them",
)

var budgetName = regexp.MustCompile(`The disruption budget (\S+)`)

// disruptionBudget names what refused an eviction with 429 Too Many
// Requests: the PodDisruptionBudget of the cause the apiserver gives, or,
// without such a cause, the apiserver's own throttling.
func disruptionBudget(err error, namespace string) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			if cause.Type != policyv1.DisruptionBudgetCause {
				continue
			}
			if m := budgetName.FindStringSubmatch(cause.Message); m != nil {
				return fmt.Sprintf("PodDisruptionBudget %q", namespace+"/"+m[1])
			}
			return "a PodDisruptionBudget"
		}
	}
	return "the apiserver throttling evictions"
}

func listPods(pods []string) string {
	slices.Sort(pods)
	if len(pods) <= maxListedPods {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(pods[:maxListedPods], ", "), len(pods)-maxListedPods)
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
