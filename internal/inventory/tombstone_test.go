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

package inventory

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestTombstones checks that a deletion the informer missed, delivered as a
// tombstone with the object's last known state, is forgotten all the same.
func TestTombstones(t *testing.T) {
	g := NewWithT(t)
	i := New()
	i.synced = []toolscache.InformerSynced{func() bool { return true }}
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{upgradev1.PolicyLabel: "p"}}}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}, Spec: clusterv1.MachineSpec{ClusterName: "c"}}
	i.setCluster(c)
	i.setMachine(m)
	got, err := i.ClustersOfPolicy(context.Background(), "ns", "p")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(1))

	i.deleteMachine(toolscache.DeletedFinalStateUnknown{Key: "ns/m", Obj: m})
	i.deleteCluster(toolscache.DeletedFinalStateUnknown{Key: "ns/c"})
	i.deleteCluster("not an object")
	got, err = i.ClustersOfPolicy(context.Background(), "ns", "p")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeEmpty())
	g.Expect(i.clusters).To(BeEmpty())
	g.Expect(i.machineClusters).To(BeEmpty())
	g.Expect(i.policies).To(BeEmpty())
}
