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

package taloscontrolplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PreTerminateHookAnnotation is the CAPI pre-terminate deletion hook every
// control-plane Machine carries with the PreTerminateHook scale-down, as the
// unreleased CACPPT variant names it (KCP's is .../kcp-cleanup): CAPI holds
// a deleted Machine there, after its drain, until the provider took its
// node out of etcd and removed the annotation.
const PreTerminateHookAnnotation = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/tcp-cleanup"

// reconcilePreTerminateHooks puts the hook on the control-plane Machines
// that lack it and serves it on the oldest deleted one, as the variant's
// reconcileMachinePreTerminateHooks does (controllers/preterminate.go): once
// CAPI waits at the hook (the Machine's Deleting condition), the node leaves
// etcd (or, when it cannot, its member is removed through another node),
// unless it is the last Machine or etcd would lose its quorum, and the hook
// is removed. Unlike the variant it does not give up after a while.
func (r *Reconciler) reconcilePreTerminateHooks(ctx context.Context, s *scope) error {
	var deleting []*clusterv1.Machine

	for _, m := range byAge(s.machines) {
		_, hooked := m.Annotations[PreTerminateHookAnnotation]

		switch {
		case m.DeletionTimestamp.IsZero() && !hooked:
			patch := client.MergeFrom(m.DeepCopy())
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}

			m.Annotations[PreTerminateHookAnnotation] = ""

			if err := r.Client.Patch(ctx, m, patch); err != nil {
				return fmt.Errorf("adding the pre-terminate hook to Machine %s: %w", klog.KObj(m), err)
			}
		case !m.DeletionTimestamp.IsZero() && hooked:
			deleting = append(deleting, m)
		}
	}

	if len(deleting) == 0 {
		return nil
	}

	slices.SortStableFunc(deleting, func(a, b *clusterv1.Machine) int { return a.DeletionTimestamp.Compare(b.DeletionTimestamp.Time) })

	return r.servePreTerminateHook(ctx, s, deleting[0])
}

// servePreTerminateHook takes the node of a Machine CAPI holds at the hook
// out of etcd, then removes the hook.
func (r *Reconciler) servePreTerminateHook(ctx context.Context, s *scope, m *clusterv1.Machine) error {
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(m))

	if c := conditions.Get(m, clusterv1.MachineDeletingCondition); c == nil || c.Reason != clusterv1.MachineDeletingWaitingForPreTerminateHookReason {
		log.V(4).Info("Waiting for CAPI to reach the pre-terminate hook")

		return nil // The Machine's change brings the control plane back.
	}

	if len(s.machines) > 1 && m.Status.NodeRef.IsDefined() {
		members, via, err := r.etcdMembers(ctx, s, m)
		if err != nil {
			log.Info("Waiting to take the node out of etcd: no other control-plane node answered", "err", err.Error())
			s.requeue = waitAfter

			return nil
		}

		i := slices.IndexFunc(members, func(e EtcdMember) bool { return strings.EqualFold(e.Hostname, m.Status.NodeRef.Name) })
		if i >= 0 {
			if ok, message := removalKeepsQuorum(members, m.Status.NodeRef.Name); !ok {
				log.Info("Waiting to take the node out of etcd: etcd would lose its quorum", "etcd", message)
				s.requeue = waitAfter

				return nil
			}

			if err := r.Etcd.Leave(ctx, s.cluster, m); err != nil {
				log.Info("The node did not leave etcd; removing its member through another node", "err", err.Error(), "via", via)

				if err := r.Etcd.Remove(ctx, s.cluster, s.machines[via], members[i].ID); err != nil {
					log.Info("Waiting to take the node out of etcd", "err", err.Error())
					s.requeue = waitAfter

					return nil
				}
			}

			log.Info("Took the node of a deleted control-plane Machine out of etcd at its pre-terminate hook")
		}
	}

	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, PreTerminateHookAnnotation)

	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("removing the pre-terminate hook of Machine %s: %w", klog.KObj(m), err)
	}

	return nil
}
