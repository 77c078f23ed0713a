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
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// eventSink keeps the events a broadcaster writes, as the apiserver would:
// a series patches the event it continues.
type eventSink struct {
	mu     sync.Mutex
	events map[string]*eventsv1.Event
}

func (k *eventSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events[e.Name] = e.DeepCopy()
	return e, nil
}

func (k *eventSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return k.Create(ctx, e)
}

func (k *eventSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events[e.Name].Series = e.Series.DeepCopy()
	return e, nil
}

// notes returns the notes of the events written, by their related object's
// name ("" for none), and how many times each was told.
func (k *eventSink) notes() map[string]int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int32{}
	for _, e := range k.events {
		count := int32(1)
		if e.Series != nil {
			count = e.Series.Count
		}
		related := ""
		if e.Related != nil {
			related = e.Related.Kind + " " + e.Related.Name + ": "
		}
		out[related+e.Note] += count
	}
	return out
}

// TestEventsAreToldApart records, with the events/v1 recorder the manager
// uses, events of one reason about two Machines and about two objects that
// declare their version, in one reconcile: each is written with its own
// note and names what it is about as its related object, rather than being
// folded into a series that keeps the first note alone.
func TestEventsAreToldApart(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(upgradev1.AddToScheme(scheme)).To(Succeed())
	sink := &eventSink{events: map[string]*eventsv1.Event{}}
	broadcaster := events.NewBroadcaster(sink)
	g.Expect(broadcaster.StartRecordingToSinkWithContext(t.Context())).To(Succeed())
	defer broadcaster.Shutdown()

	r := &Reconciler{Recorder: broadcaster.NewRecorder(scheme, "tollgate")}
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha", ResourceVersion: "42"}}
	cp := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-cp-0", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "controlplane.cluster.x-k8s.io/v1alpha3", Kind: "TalosControlPlane", Name: "alpha-cp", Controller: ptr.To(true),
	}}}}
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Machines: map[string]*clusterv1.Machine{cp.Name: cp}}}

	r.machineEvent(s, "w-0", corev1.EventTypeWarning, "MachineLeft", "Upgrade", "Machine %s was deleted during its upgrade", "w-0")
	r.machineEvent(s, "w-1", corev1.EventTypeWarning, "MachineLeft", "Upgrade", "Machine %s was deleted during its upgrade", "w-1")
	r.ownerEvent(s, disruption.Owner{Kind: disruption.KindMachineDeployment, Name: "md-a"}, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "path of md-a")
	r.ownerEvent(s, disruption.Owner{Kind: disruption.KindMachineDeployment, Name: "md-b"}, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "path of md-b")
	r.ownerEvent(s, disruption.Owner{Kind: "TalosControlPlane", Name: "alpha-cp"}, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "path of the control plane")
	r.event(s, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "path of the Cluster")

	g.Eventually(sink.notes, 30*time.Second, 10*time.Millisecond).Should(Equal(map[string]int32{
		"Machine w-0: Machine w-0 was deleted during its upgrade": 1,
		"Machine w-1: Machine w-1 was deleted during its upgrade": 1,
		"MachineDeployment md-a: path of md-a":                    1,
		"MachineDeployment md-b: path of md-b":                    1,
		"TalosControlPlane alpha-cp: path of the control plane":   1,
		"path of the Cluster":                                     1,
	}))
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, e := range sink.events {
		g.Expect(e.Regarding.Name).To(Equal("alpha"))
		if e.Related != nil {
			g.Expect(e.Related.Namespace).To(Equal("fleet"))
			g.Expect(e.Related.APIVersion).To(BeElementOf(clusterv1.GroupVersion.String(), "controlplane.cluster.x-k8s.io/v1alpha3"))
		}
	}
}
