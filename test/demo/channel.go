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

package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/promserver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// The --channel flavour: a ReleaseChannel moves the release through three
// stages of Clusters, each in a namespace of its own (lab, dev, prod): lab
// soaks it, dev soaks it while an analysis measures each Cluster's error
// ratio in Prometheus (a real PromQL engine, test/promserver, which the
// demo feeds), and prod waits for a person's approval, which the demo gives
// as alice would with kubectl tollgate approve.

const (
	// channelName is the demo's ReleaseChannel.
	channelName = "talos-fleet"
	// approver is the user who approves prod.
	approver = "alice@example.com"
)

// channelStages are the stages, in their order.
var channelStages = []string{"lab", "dev", "prod"}

// runChannel runs the --channel flavour.
func runChannel(ctx context.Context, c *config, out io.Writer) error {
	start := time.Now()
	say := func(format string, args ...any) {
		printf(out, "[%6s] %s\n", rolloutview.FormatDuration(time.Since(start)), fmt.Sprintf(format, args...))
	}
	if err := ensureAssets(out); err != nil {
		return err
	}
	prom, err := promserver.Start()
	if err != nil {
		return err
	}
	defer func() { _ = prom.Close() }()
	say("Starting the sandbox: no cluster, no container engine; Prometheus' own query engine serves the analysis at %s", prom.URL)
	sb, err := sandbox.Start(ctx, sandbox.Options{Webhooks: true, CAPI: c.capi, InstallerVersions: []string{c.to}, RebootDuration: c.reboot, Logf: say})
	if err != nil {
		return err
	}
	defer func() {
		stopped := time.Now()
		if err := sb.Stop(); err != nil {
			say("Stopped the sandbox in %s (%v: killed)", rolloutview.FormatDuration(time.Since(stopped)), err)
			return
		}
		say("Stopped the sandbox in %s", rolloutview.FormatDuration(time.Since(stopped)))
	}()
	if err := sb.StartManager(ctx, manager.Options{}); err != nil {
		return err
	}
	clusters, err := createStageClusters(ctx, sb, c)
	if err != nil {
		return err
	}
	say("Created a Cluster per stage, each in its namespace with a TalosUpgradePolicy whose target comes from ReleaseChannel %s (targetFrom: Channel): %s", channelName, describeClusters(clusters))
	stopMetrics := feedErrorRatios(prom)
	defer stopMetrics()
	if err := sb.Management.Client.Create(ctx, demoChannel(c, prom.URL)); err != nil {
		return fmt.Errorf("creating ReleaseChannel %s: %w", channelName, err)
	}
	say("Created ReleaseChannel %s carrying %s: lab (soak %s), then dev (soak %s, its Clusters' error ratio measured every 5s, under 1%%), then prod (an approval)",
		channelName, c.to, c.soak, 2*c.soak)
	printLine(out)
	ch, err := followChannel(ctx, sb, c, say)
	printLine(out)
	if ch != nil {
		rolloutview.WriteChannel(out, ch, time.Now(), rolloutview.ChannelOptions{})
		printLine(out)
	}
	if err != nil {
		return err
	}
	if c.capi {
		if err := reportStageNodeInfo(ctx, sb.Management.Client, c, out); err != nil {
			return err
		}
	}
	say("Done: the demo took %s", rolloutview.FormatDuration(time.Since(start)))
	if c.keep {
		return keepChannel(ctx, sb, out)
	}
	return nil
}

// stageNamespace is the namespace of a stage's Cluster and policy.
func stageNamespace(stage string) string { return namespace + "-" + stage }

// createStageClusters makes the Cluster of every stage, at once, and its
// policy, and opts it in.
func createStageClusters(ctx context.Context, sb *sandbox.Sandbox, c *config) (map[string]*sandbox.Cluster, error) {
	clusters := map[string]*sandbox.Cluster{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(channelStages))
	for i, stage := range channelStages {
		wg.Go(func() {
			ns := stageNamespace(stage)
			cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: stage, ControlPlanes: c.machines - c.workers, Workers: c.workers, TalosVersion: c.from})
			if err == nil {
				err = sb.Management.Client.Create(ctx, sb.Policy(ns, policyName, "", func(p *upgradev1.TalosUpgradePolicy) {
					p.Spec.TargetFrom, p.Spec.Channel = upgradev1.TargetFromChannel, channelName
				}))
			}
			if err == nil {
				err = cl.OptIn(ctx, policyName)
			}
			errs[i] = err
			mu.Lock()
			clusters[stage] = cl
			mu.Unlock()
		})
	}
	wg.Wait()
	return clusters, errors.Join(errs...)
}

func describeClusters(clusters map[string]*sandbox.Cluster) string {
	s := ""
	for i, stage := range channelStages {
		if i > 0 {
			s += ", "
		}
		cl := clusters[stage]
		s += fmt.Sprintf("%s/%s (%d Machines)", cl.Namespace, cl.Name, len(cl.Fixture.Machines))
	}
	return s
}

// feedErrorRatios writes every Cluster's error ratio (0.2%) into
// Prometheus twice a second, until the returned function is called. The
// analysis looks back over the soak so far ($window, from 1s), and a
// window without a sample is an empty result, which fails closed: a scrape
// every 10s failed dev's first measurement on a loaded machine.
func feedErrorRatios(prom *promserver.Server) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	feed := func() {
		for _, stage := range channelStages {
			_ = prom.Set(map[string]string{"__name__": "error_ratio", "cluster": stage}, 0.002)
		}
	}
	feed()
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				feed()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// demoChannel is the demo's ReleaseChannel.
func demoChannel(c *config, promURL string) *upgradev1.ReleaseChannel {
	stage := func(name string) upgradev1.ChannelStage {
		return upgradev1.ChannelStage{Name: name, Policies: []upgradev1.PolicyReference{{Namespace: stageNamespace(name), Name: policyName}}}
	}
	lab, dev, prod := stage("lab"), stage("dev"), stage("prod")
	lab.SoakTime = &metav1.Duration{Duration: c.soak}
	dev.SoakTime = &metav1.Duration{Duration: 2 * c.soak}
	dev.Analysis = &upgradev1.StageAnalysis{
		Interval: &metav1.Duration{Duration: 5 * time.Second},
		Queries: []upgradev1.AnalysisQuery{{
			Name: "error-ratio", HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: promURL},
			Query: `max_over_time(error_ratio{cluster="$cluster"}[$window])`, Comparison: &upgradev1.PrometheusComparison{Operator: "<", Value: "0.01"},
		}},
	}
	prod.Approval = &upgradev1.StageApprovalGate{Timeout: &metav1.Duration{Duration: time.Hour}}
	return &upgradev1.ReleaseChannel{
		ObjectMeta: metav1.ObjectMeta{Name: channelName},
		Spec: upgradev1.ReleaseChannelSpec{
			Versions: []upgradev1.ChannelVersion{{TalosVersion: c.to}},
			Stages:   []upgradev1.ChannelStage{lab, dev, prod},
		},
	}
}

// followChannel prints a line each time the release moves in a stage, and
// approves it in prod, as alice, c.approveAfter after prod began to wait.
// It returns the channel once the release ended (Completed, or Halted) or
// c.timeout passed.
func followChannel(ctx context.Context, sb *sandbox.Sandbox, c *config, say func(string, ...any)) (*upgradev1.ReleaseChannel, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	user, err := sb.Management.AddAdmin(approver)
	if err != nil {
		return nil, err
	}
	alice, err := client.New(user.Config(), client.Options{Scheme: sb.Management.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	shown := map[string]string{}
	var waitingSince time.Time
	approved := false
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		ch := &upgradev1.ReleaseChannel{}
		if err := sb.Management.Client.Get(ctx, client.ObjectKey{Name: channelName}, ch); err != nil && ctx.Err() == nil {
			return nil, err
		}
		var v *upgradev1.ChannelVersionStatus
		if n := len(ch.Status.Versions); n > 0 {
			v = &ch.Status.Versions[n-1]
		}
		if v != nil {
			for _, stage := range channelStages {
				line := rolloutview.StageCell(v, stage, time.Now())
				// A wait's age grows every second: a line per change of
				// anything else.
				key := waitAge.ReplaceAllString(line, "$1")
				if key != shown[stage] && line != "-" {
					say("%s %-4s %s", v.Name, stage, line)
					shown[stage] = key
				}
			}
			if rec := stageRecordOf(v, "prod"); rec != nil && rec.Phase == upgradev1.StageWaitingForApproval && !approved {
				if waitingSince.IsZero() {
					waitingSince = time.Now()
				}
				if time.Since(waitingSince) >= c.approveAfter {
					reason := "CHG-2042: dev's error ratio flat through its soak"
					say("%s approves, as `kubectl tollgate approve %s prod --reason %q` does", approver, channelName, reason)
					if err := approve(ctx, alice, v.Name, reason); err != nil {
						return ch, err
					}
					approved = true
				}
			}
			if v.Phase.Ended() {
				if v.Phase != upgradev1.ChannelVersionCompleted {
					return ch, fmt.Errorf("the release ended %s: %s", v.Phase, v.Message)
				}
				return ch, nil
			}
		}
		select {
		case <-ctx.Done():
			return ch, fmt.Errorf("the release did not pass every stage in time: %w", ctx.Err())
		case <-tick.C: // Polling the channel's status for the live lines.
		}
	}
}

// waitAge matches the age of a wait for an approval in a StageCell.
var waitAge = regexp.MustCompile(`^(WaitingForApproval) [^,]+`)

// approve adds alice's approval of version in prod.
func approve(ctx context.Context, c client.Client, version, reason string) error {
	ch := &upgradev1.ReleaseChannel{}
	if err := c.Get(ctx, client.ObjectKey{Name: channelName}, ch); err != nil {
		return err
	}
	orig := ch.DeepCopy()
	ch.Spec.Approvals = append(ch.Spec.Approvals, upgradev1.StageApproval{Stage: "prod", Version: version, Reason: reason})
	if err := c.Patch(ctx, ch, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("approving %s in prod: %w", version, err)
	}
	return nil
}

func stageRecordOf(v *upgradev1.ChannelVersionStatus, stage string) *upgradev1.VersionStageStatus {
	for i := range v.Stages {
		if v.Stages[i].Stage == stage {
			return &v.Stages[i]
		}
	}
	return nil
}

// reportStageNodeInfo prints what CAPI reports of every stage's Machines.
func reportStageNodeInfo(ctx context.Context, c client.Client, cfg *config, out io.Writer) error {
	printLine(out, "What CAPI reports in each Machine's status.nodeInfo.osImage, from its Node:")
	deadline := time.Now().Add(nodeInfoTimeout)
	for _, stage := range channelStages {
		for {
			machines := &clusterv1.MachineList{}
			if err := c.List(ctx, machines, client.InNamespace(stageNamespace(stage))); err != nil {
				return err
			}
			onTarget := len(machines.Items) > 0
			for _, m := range machines.Items {
				onTarget = onTarget && m.Status.NodeInfo != nil && m.Status.NodeInfo.OSImage == "Talos ("+cfg.to+")"
			}
			if onTarget || time.Now().After(deadline) {
				for _, m := range machines.Items {
					osImage := ""
					if m.Status.NodeInfo != nil {
						osImage = m.Status.NodeInfo.OSImage
					}
					printf(out, "  %s Machine %s  %q\n", stage, m.Name, osImage)
				}
				break
			}
			time.Sleep(200 * time.Millisecond) // Polling what CAPI copies from the Nodes.
		}
	}
	return nil
}

// keepChannel leaves the sandbox up until ctx is done, with a kubeconfig to
// explore it with kubectl and kubectl tollgate.
func keepChannel(ctx context.Context, sb *sandbox.Sandbox, out io.Writer) error {
	dir, err := os.MkdirTemp("", "tollgate-demo-")
	if err != nil {
		return fmt.Errorf("creating a directory for the kubeconfig: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path, err := sb.WriteKubeconfig(dir)
	if err != nil {
		return err
	}
	printf(out, "\nThe sandbox stays up, the manager keeps running; Ctrl-C stops both.\n\n"+
		"  export KUBECONFIG=%s\n"+
		"  kubectl tollgate channel %s\n"+
		"  kubectl get releasechannel %s -o yaml\n"+
		"  kubectl get talosupgrades,talosupgradepolicies -A\n\n", path, channelName, channelName)
	<-ctx.Done()
	printLine(out)
	return nil
}
