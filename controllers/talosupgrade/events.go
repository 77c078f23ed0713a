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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// Every event of the controller regards the rollout's TalosUpgrade. The
// events/v1 recorder folds the events it is given for one object, at one
// resourceVersion, with the same type, reason, action and related object
// into a series that keeps the note of the first: two Machines' events of
// one reason in one reconcile would be told as one, about the first
// Machine. An event about a Machine, or about the object that declares a
// version, names it as its related object, so that each is told.

// event records an event about the rollout as a whole.
func (r *Reconciler) event(s *scope, eventType, reason, action, format string, args ...any) {
	r.Recorder.Eventf(s.Upgrade, nil, eventType, reason, action, format, args...)
}

// machineEvent records an event about one Machine of the rollout, which
// may be gone.
func (r *Reconciler) machineEvent(s *scope, machine string, eventType, reason, action, format string, args ...any) {
	r.Recorder.Eventf(s.Upgrade, ownerObject(s, disruption.Owner{Kind: disruption.KindMachine, Name: machine}), eventType, reason, action, format, args...)
}

// ownerEvent records an event about the object that declares the version
// of some Machines: the control plane, a MachineDeployment or a Machine.
func (r *Reconciler) ownerEvent(s *scope, o disruption.Owner, eventType, reason, action, format string, args ...any) {
	r.Recorder.Eventf(s.Upgrade, ownerObject(s, o), eventType, reason, action, format, args...)
}

// ownerObject returns a reference to o (a Machine too), or nil when its API
// version is not known: the control plane's is that of its Machines'
// controller reference.
func ownerObject(s *scope, o disruption.Owner) runtime.Object {
	switch o.Kind {
	case disruption.KindMachineDeployment, disruption.KindMachine:
		return objectReference(clusterv1.GroupVersion.String(), o.Kind, s.Upgrade.Namespace, o.Name)
	}
	for _, m := range s.Machines {
		if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == o.Kind && ref.Name == o.Name {
			return objectReference(ref.APIVersion, o.Kind, s.Upgrade.Namespace, o.Name)
		}
	}
	return nil
}

// objectReference returns an object that stands for the one named, for an
// event to refer to.
func objectReference(apiVersion, kind, namespace, name string) runtime.Object {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
	}
}
