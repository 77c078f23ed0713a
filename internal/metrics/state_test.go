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

package metrics

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func rollout(name string, phase upgradev1.UpgradePhase, machines ...upgradev1.MachinePhase) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name},
		Spec:       upgradev1.TalosUpgradeSpec{ClusterName: name, PolicyName: "p"},
		Status:     upgradev1.TalosUpgradeStatus{Phase: phase},
	}
	for i, p := range machines {
		u.Status.Machines = append(u.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: name + "-" + string(rune('a'+i)), Phase: p})
	}
	return u
}

func cluster(name string, connected bool) *clusterv1.Cluster {
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}}
	if connected {
		c.Annotations = map[string]string{upgradev1.WorkloadConnectionAnnotation: name}
	}
	return c
}

func TestStateCollector(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(upgradev1.AddToScheme(scheme)).To(Succeed())
	g.Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
	a := rollout("a", upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseDraining, upgradev1.MachinePhasePending)
	a.Status.Removals = []upgradev1.MachineRemovalStatus{{Machine: "a-z", Cause: upgradev1.RemovalCauseRemediated, Phase: upgradev1.RemovalPhaseHeld}}
	b := rollout("b", upgradev1.UpgradePhaseCompleted, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseRebooting)
	b.Status.Machines[1].Action = upgradev1.MachineActionReboot
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		a, b,
		rollout("c", ""),
		cluster("a", true), cluster("b", false), cluster("c", true),
	).Build()
	// c asks for its connection but the ClusterCache is not connected yet.
	unset := SetStateSource(StateSource{Reader: reader, Connected: func(_ context.Context, key client.ObjectKey) bool { return key.Name == "a" }})
	defer unset()

	want := `
# HELP tollgate_machines Machines of the rollouts by policy, Cluster, action (Upgrade, Reboot or Configure) and phase; phases without a Machine are left out.
# TYPE tollgate_machines gauge
tollgate_machines{action="Upgrade",cluster="a",namespace="fleet",phase="Completed",policy="p"} 1
tollgate_machines{action="Upgrade",cluster="a",namespace="fleet",phase="Draining",policy="p"} 1
tollgate_machines{action="Upgrade",cluster="a",namespace="fleet",phase="Pending",policy="p"} 1
tollgate_machines{action="Upgrade",cluster="b",namespace="fleet",phase="Completed",policy="p"} 1
tollgate_machines{action="Reboot",cluster="b",namespace="fleet",phase="Rebooting",policy="p"} 1
# HELP tollgate_removals Machines CAPI deletes that Tollgate's deletion hook holds or released, by policy, Cluster, cause and phase; phases without a Machine are left out.
# TYPE tollgate_removals gauge
tollgate_removals{cause="Remediated",cluster="a",namespace="fleet",phase="Held",policy="p"} 1
# HELP tollgate_workload_connections Workload clusters Tollgate is connected to: Clusters whose rollout holds the workload connection and whose ClusterCache connection is up.
# TYPE tollgate_workload_connections gauge
tollgate_workload_connections 1
`
	g.Expect(testutil.CollectAndCompare(state, strings.NewReader(want), "tollgate_machines", "tollgate_removals", "tollgate_workload_connections")).To(Succeed())

	// Every phase of tollgate_rollouts is reported; a rollout without a
	// phase yet is Pending.
	wantRollouts := `
# HELP tollgate_rollouts TalosUpgrades (rollouts) by policy and phase; every phase is reported, 0 included.
# TYPE tollgate_rollouts gauge
tollgate_rollouts{namespace="fleet",phase="Completed",policy="p"} 1
tollgate_rollouts{namespace="fleet",phase="Detached",policy="p"} 0
tollgate_rollouts{namespace="fleet",phase="Failed",policy="p"} 0
tollgate_rollouts{namespace="fleet",phase="InProgress",policy="p"} 1
tollgate_rollouts{namespace="fleet",phase="Paused",policy="p"} 0
tollgate_rollouts{namespace="fleet",phase="Pending",policy="p"} 1
tollgate_rollouts{namespace="fleet",phase="Preflight",policy="p"} 0
tollgate_rollouts{namespace="fleet",phase="WaitingForHealthChecks",policy="p"} 0
`
	g.Expect(testutil.CollectAndCompare(state, strings.NewReader(wantRollouts), "tollgate_rollouts")).To(Succeed())

	unset()
	g.Expect(testutil.CollectAndCount(state)).To(BeZero(), "no source, no state series")
}
