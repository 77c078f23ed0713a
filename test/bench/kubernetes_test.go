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

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

func TestKubernetesIdeal(t *testing.T) {
	g := NewWithT(t)
	// 3 control-plane nodes' static Pods, then their 3 kubelets, then 20
	// workers 5 at a time: 10 restarts.
	g.Expect(kubernetesIdeal(3, 20, 5, 200*time.Millisecond)).To(Equal(2 * time.Second))
	g.Expect(kubernetesIdeal(3, 20, 1, 200*time.Millisecond)).To(Equal(5200 * time.Millisecond))
	g.Expect(kubernetesIdeal(1, 4, 3, time.Second)).To(Equal(4 * time.Second))
}

// BenchmarkKubernetes runs scenario 7 once (`make bench`, or
// `go test ./test/bench -run '^$' -bench Kubernetes -benchtime 1x`):
// Kubernetes-only rollouts of scenario 1's Cluster against their ideal,
// and a Talos hop with a Kubernetes minor in one rollout against two. It
// prints the figures, reports the ratios as metrics and writes
// out/bench/kubernetes.json. BENCH_KUBERNETES_SMALL=1 runs it on 1+2
// Machines with reboots of 1s, in under a minute: a check of its wiring,
// not a figure.
func BenchmarkKubernetes(b *testing.B) {
	g := NewWithT(b)
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	o := KubernetesOptions{
		ControlPlanes: 3, Workers: 20, Reboot: 5 * time.Second, MaxUnavailable: []int{1, 5}, HopMaxUnavailable: 5,
		Timeout: 5 * time.Minute, Logf: func(string, ...any) {},
	}
	if os.Getenv("BENCH_KUBERNETES_SMALL") != "" {
		// A quick run of the wiring: 1+2 Machines, reboots of 1s.
		o.ControlPlanes, o.Workers, o.Reboot, o.MaxUnavailable, o.HopMaxUnavailable = 1, 2, time.Second, []int{1}, 1
	}
	var res *KubernetesResult
	for b.Loop() {
		var err error
		res, err = RunKubernetes(ctx, o, func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, r := range res.KubernetesOnly {
		b.ReportMetric(r.Factor, fmt.Sprintf("k8s-only-mu%d-x-ideal", r.MaxUnavailable))
		b.ReportMetric(r.PerMachineSeconds, fmt.Sprintf("k8s-only-mu%d-s/machine", r.MaxUnavailable))
	}
	b.ReportMetric(res.Ratio, "combined/separate")
	PrintKubernetes(os.Stdout, res)
	out := filepath.Join(envtest.RepoRoot(), "out", "bench")
	g.Expect(os.MkdirAll(out, 0o750)).To(Succeed())
	data, err := json.MarshalIndent(res, "", "  ")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(out, "kubernetes.json"), data, 0o600)).To(Succeed())
}
