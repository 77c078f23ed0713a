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

package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// TestChannelAndApprove draws a release channel whose last stage waits for
// an approval, refuses the approvals that cannot be given (a stage that
// waits for none, no reason), and approves as alice: the webhook records
// her and the version passes. Each stage is a Cluster of one control-plane
// Machine, in a namespace of its own.
func TestChannelAndApprove(t *testing.T) {
	skipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const name = "plugin-channel"
	for _, stage := range []string{"lab", "prod"} {
		ns := name + "-" + stage
		cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: stage, ControlPlanes: 1, TalosVersion: "v1.12.4"})
		g.Expect(err).NotTo(HaveOccurred())
		defer stop(t, cl)
		g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, "talos", "", func(p *upgradev1.TalosUpgradePolicy) {
			p.Spec.TargetFrom, p.Spec.Channel = upgradev1.TargetFromChannel, name
		}))).To(Succeed())
		g.Expect(cl.OptIn(ctx, "talos")).To(Succeed())
	}
	ch := &upgradev1.ReleaseChannel{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: upgradev1.ReleaseChannelSpec{
		Versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0"}},
		Stages: []upgradev1.ChannelStage{
			{Name: "lab", Policies: []upgradev1.PolicyReference{{Namespace: name + "-lab", Name: "talos"}}},
			{Name: "prod", Policies: []upgradev1.PolicyReference{{Namespace: name + "-prod", Name: "talos"}}, Approval: &upgradev1.StageApprovalGate{}},
		},
	}}
	g.Expect(sb.Management.Client.Create(ctx, ch)).To(Succeed())
	t.Cleanup(func() { _ = sb.Management.Client.Delete(context.Background(), ch) })

	var drawn result
	g.Eventually(func(g Gomega) {
		drawn = kubectl(ctx, t, alice, "channel", name)
		g.Expect(drawn.code).To(Equal(0), drawn.err)
		g.Expect(drawn.out).To(MatchRegexp(`(?m)^prod\s+lab\s+1/1\s+v1\.13\.0\s+WaitingForApproval \d+s$`))
	}, 4*time.Minute, 500*time.Millisecond).Should(Succeed())
	t.Logf("kubectl tollgate channel %s:\n%s", name, drawn.out)
	g.Expect(drawn.out).To(HavePrefix("ReleaseChannel plugin-channel (versions, supersede Halted)\n  WaitingForApproval: v1.13.0 in stage prod: soaked and passed its analysis; waiting since "))
	g.Expect(drawn.out).To(ContainSubstring("\n  lab → prod\n"))
	g.Expect(drawn.out).To(MatchRegexp(`(?m)^STAGE\s+AFTER\s+CLUSTERS\s+GRANTED\s+v1\.13\.0 \(Promoting\)$`))
	g.Expect(drawn.out).To(MatchRegexp(`(?m)^lab\s+-\s+1/1\s+v1\.13\.0\s+Passed \d\d:\d\d:\d\d$`))

	r := kubectl(ctx, t, alice, "approve", name, "prod")
	g.Expect(r.code).To(Equal(2), "a reason is required")
	g.Expect(r.err).To(ContainSubstring("--reason is required"))
	r = kubectl(ctx, t, alice, "approve", name, "lab", "--reason", "CHG-1")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(Equal("error: stage lab of ReleaseChannel plugin-channel is not waiting for an approval: v1.13.0 is Passed there\n"))
	r = kubectl(ctx, t, alice, "approve", name, "lab", "--version", "v1.13.0", "--reason", "CHG-1")
	g.Expect(r.code).To(Equal(1), "the webhook refuses it too")
	g.Expect(r.err).To(ContainSubstring("spec.approvals[0].stage: Invalid value: \"lab\": the stage asks for no approval"))
	r = kubectl(ctx, t, alice, "approve", name, "staging", "--reason", "CHG-1")
	g.Expect(r.code).To(Equal(2))
	g.Expect(r.err).To(ContainSubstring(`ReleaseChannel plugin-channel has no stage "staging" (its stages: lab, prod)`))

	r = kubectl(ctx, t, alice, "approve", name, "prod", "--reason", "CHG-2042: lab flat for a day")
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(Equal("releasechannel.upgrade.tollgate.dev/plugin-channel approved v1.13.0 in stage prod; by alice: \"CHG-2042: lab flat for a day\"\n"))
	g.Eventually(func(g Gomega) {
		got := &upgradev1.ReleaseChannel{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Versions).To(ContainElement(SatisfyAll(HaveField("Name", "v1.13.0"), HaveField("Phase", upgradev1.ChannelVersionCompleted))))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
	drawn = kubectl(ctx, t, bob, "channel")
	g.Expect(drawn.out).To(MatchRegexp(`(?m)^prod\s+lab\s+1/1\s+v1\.13\.0\s+Passed \d\d:\d\d:\d\d \(approved by alice\)$`))
	g.Expect(drawn.out).To(ContainSubstring("UpToDate: no version is in flight; the newest, v1.13.0, is Completed"))
}
