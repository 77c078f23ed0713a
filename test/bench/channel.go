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
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// Scenario 8 (channel.go): a ReleaseChannel moves a release through the
// stages of a fleet (1,000 Clusters in four stages of a policy each, in a
// namespace each). The fleet is created converged, on the release already:
// the figures are the channel's and the policies' (a gate opening, the
// rollouts it starts, the stage completing, the next gate), not the
// Machines' reboots, which scenario 2 measures. For each stage the bench's
// own informers stamp when its gate opened (status.stages[].version), when
// each of its rollouts carried the release (created by the stage's policy)
// and Completed, and when the stage passed; then, with the
// fleet at rest, the controller's requests are counted over a window: the
// channel is to add none beyond its timers (it has none here: no follow, no
// analysis, no soak left).

// channelBench and channelPolicy name scenario 8's ReleaseChannel and the
// policy of each stage's namespace.
const (
	channelBench  = "bench"
	channelPolicy = "fleet"
)

// ChannelOptions size scenario 8.
type ChannelOptions struct {
	// Clusters are split evenly into Stages, each the policy of a
	// namespace of its own; Machines per Cluster.
	Clusters, Stages, Machines int
	// Soak is every stage's soakTime.
	Soak time.Duration
	// Idle is the window the fleet at rest is watched for.
	Idle       time.Duration
	Controller ControllerOptions
	// Timeout bounds the release's way through the stages.
	Timeout time.Duration
}

// ChannelResult is the outcome of scenario 8.
type ChannelResult struct {
	Clusters int `json:"clusters"`
	Stages   int `json:"stages"`
	Machines int `json:"machines"`
	// Controller are the flags the controller ran with.
	Controller []string `json:"controllerArgs"`
	// SoakSeconds is every stage's soak.
	SoakSeconds float64 `json:"soakSeconds"`
	// ThroughSeconds is from the channel's creation to its release
	// Completed (every stage passed).
	ThroughSeconds float64 `json:"throughSeconds"`
	// Promotions are the stages, in their order.
	Promotions []StagePromotion `json:"promotions"`
	// IdleSeconds is the window at rest, and IdleRequests the controller's
	// requests over it (the leader election's left out); IdleChannelRequests
	// those on releasechannels, IdleChannelReconciles the channel
	// controller's reconciles, IdleWrites the writes.
	IdleSeconds           float64  `json:"idleSeconds"`
	IdleRequests          int64    `json:"idleRequests"`
	IdleChannelRequests   int64    `json:"idleChannelRequests"`
	IdleChannelReconciles float64  `json:"idleChannelReconciles"`
	IdleWrites            int64    `json:"idleWrites"`
	IdleTop               []string `json:"idleTopRequests,omitempty"`
	Note                  string   `json:"note,omitempty"`
}

// StagePromotion is one stage's figures, in seconds from its gate opening
// (as the bench's informer saw status.stages[].version change).
type StagePromotion struct {
	Stage    string `json:"stage"`
	Clusters int    `json:"clusters"`
	// GateAfterSeconds is from the stage before it passing (the first
	// stage: the channel's creation) to this gate opening: the channel's
	// own latency.
	GateAfterSeconds float64 `json:"gateAfterPreviousSeconds"`
	// FirstRolloutSeconds, P50RolloutSeconds and AllRolloutsSeconds are to
	// the first, the median and the last of the stage's rollouts carrying
	// the release (a TalosUpgrade created or retargeted by its policy).
	FirstRolloutSeconds float64 `json:"firstRolloutSeconds"`
	P50RolloutSeconds   float64 `json:"p50RolloutSeconds"`
	AllRolloutsSeconds  float64 `json:"allRolloutsSeconds"`
	// AllCompletedSeconds is to the last rollout Completed, PassedSeconds
	// to the stage passing (its soak after the last completion).
	AllCompletedSeconds float64 `json:"allCompletedSeconds"`
	PassedSeconds       float64 `json:"passedSeconds"`
}

// stageNamespace is the namespace of stage k's policy and Clusters.
func stageNamespace(k int) string { return fmt.Sprintf("channel-stage-%d", k) }

// RunChannel runs scenario 8.
func RunChannel(ctx context.Context, w *World, o ChannelOptions, logf func(string, ...any)) (*ChannelResult, error) {
	res := &ChannelResult{Clusters: o.Clusters, Stages: o.Stages, Machines: o.Clusters * o.Machines, SoakSeconds: o.Soak.Seconds(),
		Note: "converged fleet: the Clusters run the release already, so a stage's rollouts complete without an upgrade call; the figures are the channel's and the policies', not the Machines' reboots"}
	per := o.Clusters / o.Stages
	logf("Scenario 8: creating %d Clusters of %d Machines in %d stages, a namespace and a policy each", per*o.Stages, o.Machines, o.Stages)
	start := time.Now()
	for k := range o.Stages {
		if err := createChannelStage(ctx, w, k, per, o.Machines); err != nil {
			return res, err
		}
	}
	logf("Scenario 8: fleet created in %s", time.Since(start).Round(time.Second))
	copts := o.Controller
	copts.Name = "channel"
	controller, err := w.StartController(copts)
	if err != nil {
		return res, err
	}
	defer controller.Stop()
	res.Controller = controller.cmd.Args[1:]
	if err := waitForMetrics(ctx, controller); err != nil {
		return res, err
	}
	if err := waitForLeader(ctx, controller); err != nil {
		return res, err
	}
	// The policies once the controller serves the webhooks.
	for k := range o.Stages {
		if err := createChannelPolicy(ctx, w, k, per); err != nil {
			return res, err
		}
	}
	stamps, err := stampPromotions(ctx, w, o.Stages)
	if err != nil {
		return res, err
	}
	defer stamps.stop()

	created := time.Now()
	if err := w.Mgmt.Client.Create(ctx, benchChannel(o)); err != nil {
		return res, fmt.Errorf("creating ReleaseChannel %s: %w", channelBench, err)
	}
	logf("Scenario 8: created ReleaseChannel %s carrying %s through %d stages, soak %s each", channelBench, ToVersion, o.Stages, o.Soak)
	if err := waitForEvery(ctx, o.Timeout, time.Second, func() (bool, error) {
		if err := controller.Exited(); err != nil {
			return false, err
		}
		return stamps.through(), nil
	}); err != nil {
		return res, fmt.Errorf("waiting for %s through every stage: %w (%s)", ToVersion, err, stamps.describe())
	}
	res.ThroughSeconds = time.Since(created).Seconds()
	res.Promotions = stamps.promotions(created, per)
	for _, p := range res.Promotions {
		logf("Scenario 8: stage %s: gate %.2fs after the previous; its %d rollouts carried the release %.2fs (first) to %.2fs (last) after the gate, Completed by %.2fs; passed at %.2fs",
			p.Stage, p.GateAfterSeconds, p.Clusters, p.FirstRolloutSeconds, p.AllRolloutsSeconds, p.AllCompletedSeconds, p.PassedSeconds)
	}
	logf("Scenario 8: %s through %d stages in %.1fs", ToVersion, o.Stages, res.ThroughSeconds)

	// At rest: what the channel costs beyond its timers.
	if err := waitForEvery(ctx, restTimeout, time.Second, func() (bool, error) { return stamps.quietFor(quietFor), nil }); err != nil {
		res.Note = joinNotes(res.Note, fmt.Sprintf("not at rest: %v", err))
	}
	before, err := controller.Scrape(ctx)
	if err != nil {
		return res, err
	}
	countsBefore := w.Proxy.Counts()
	idleStart := time.Now()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(o.Idle):
	}
	res.IdleSeconds = time.Since(idleStart).Seconds()
	after, err := controller.Scrape(ctx)
	if err != nil {
		return res, err
	}
	counts := w.Proxy.Counts().Sub(countsBefore)
	notLease := func(k RequestKey) bool { return !IsLease(k) }
	res.IdleRequests = counts.Total(notLease)
	res.IdleChannelRequests = counts.Total(func(k RequestKey) bool {
		return k.Resource == "releasechannels" || k.Resource == "releasechannels/status"
	})
	res.IdleWrites = counts.Total(func(k RequestKey) bool { return IsWrite(k) && !IsLease(k) })
	res.IdleTop = counts.Top(5)
	res.IdleChannelReconciles = after.Sum("controller_runtime_reconcile_total", `controller="releasechannel"`) - before.Sum("controller_runtime_reconcile_total", `controller="releasechannel"`)
	logf("Scenario 8: at rest for %.0fs: %d requests but the leader election's (%d on releasechannels), %d writes, %.0f reconciles of the channel",
		res.IdleSeconds, res.IdleRequests, res.IdleChannelRequests, res.IdleWrites, res.IdleChannelReconciles)
	return res, nil
}

// createChannelPolicy creates stage k's policy: its targets from the
// channel, every Cluster admitted at once.
func createChannelPolicy(ctx context.Context, w *World, k, clusters int) error {
	ns := stageNamespace(k)
	policy := w.sb.Policy(ns, channelPolicy, "", func(p *upgradev1.TalosUpgradePolicy) {
		inFlight := int32(clusters) //nolint:gosec // Sized by a flag, far below 2^31.
		p.Spec.TargetFrom, p.Spec.Channel = upgradev1.TargetFromChannel, channelBench
		p.Spec.Rollout.MaxClustersInProgress = &inFlight
	})
	if err := w.Mgmt.Client.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating TalosUpgradePolicy %s/%s: %w", ns, channelPolicy, err)
	}
	return nil
}

// createChannelStage creates stage k's namespace and its Clusters,
// converged on the release, labelled with the stage's policy.
func createChannelStage(ctx context.Context, w *World, k, clusters, machines int) error {
	ns := stageNamespace(k)
	if err := w.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	const parallel = 8
	next := make(chan int)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range parallel {
		wg.Go(func() {
			for i := range next {
				err := w.CreateCluster(ctx, ClusterSpec{
					// Named apart across the stages, and from the fleet of
					// scenario 2 (c0000...): their Nodes share the workload
					// apiservers, which have no namespaces.
					Namespace: ns, Name: fmt.Sprintf("ch%04d", k*clusters+i), ControlPlanes: min(3, machines), Workers: machines - min(3, machines),
					Workload: i % len(w.Workloads), Policy: channelPolicy, Converged: true,
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range clusters {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// benchChannel is scenario 8's channel: the stages in order, each the
// policy of its namespace, each with soak o.Soak.
func benchChannel(o ChannelOptions) *upgradev1.ReleaseChannel {
	ch := &upgradev1.ReleaseChannel{
		ObjectMeta: metav1.ObjectMeta{Name: channelBench},
		Spec:       upgradev1.ReleaseChannelSpec{Versions: []upgradev1.ChannelVersion{{TalosVersion: ToVersion}}},
	}
	for k := range o.Stages {
		ch.Spec.Stages = append(ch.Spec.Stages, upgradev1.ChannelStage{
			Name:     fmt.Sprintf("stage-%d", k),
			Policies: []upgradev1.PolicyReference{{Namespace: stageNamespace(k), Name: channelPolicy}},
			SoakTime: &metav1.Duration{Duration: o.Soak},
		})
	}
	return ch
}

// promotionStamps are the instants the bench's informers saw the
// promotion's steps, in the bench's clock.
type promotionStamps struct {
	cancel context.CancelFunc
	stages int

	mu sync.Mutex
	// gate and passed are when each stage's gate opened (its grant became
	// the release) and when it passed, by stage name.
	gate, passed map[string]time.Time
	// rolled and completed are when each rollout carried the release and
	// when it Completed, by namespace/name.
	rolled, completed map[string]time.Time
	// versionCompleted is when the release passed every stage.
	versionCompleted time.Time
	// last is when the informers last saw a change.
	last time.Time
}

// stampPromotions starts informers on the TalosUpgrades and the
// ReleaseChannels, with the bench's own credentials (not through the
// proxy), stamping each step when first seen.
func stampPromotions(ctx context.Context, w *World, stages int) (*promotionStamps, error) {
	c, err := cache.New(w.Mgmt.Config, cache.Options{Scheme: envtest.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the bench's informers: %w", err)
	}
	p := &promotionStamps{stages: stages, gate: map[string]time.Time{}, passed: map[string]time.Time{},
		rolled: map[string]time.Time{}, completed: map[string]time.Time{}}
	for _, obj := range []client.Object{&upgradev1.TalosUpgrade{}, &upgradev1.ReleaseChannel{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { p.see(o) },
			UpdateFunc: func(_, o any) { p.see(o) },
		}); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	go func() { _ = c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.New("the bench's informers did not sync")
	}
	return p, nil
}

func (p *promotionStamps) stop() { p.cancel() }

// see stamps what an object says, the first time it says it.
func (p *promotionStamps) see(o any) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = now
	first := func(m map[string]time.Time, key string) {
		if _, ok := m[key]; !ok {
			m[key] = now
		}
	}
	switch o := o.(type) {
	case *upgradev1.TalosUpgrade:
		if o.Spec.TalosVersion != ToVersion {
			return
		}
		key := o.Namespace + "/" + o.Name
		first(p.rolled, key)
		if o.Finished() && o.Status.Phase == upgradev1.UpgradePhaseCompleted {
			first(p.completed, key)
		}
	case *upgradev1.ReleaseChannel:
		if o.Name != channelBench {
			return
		}
		for _, s := range o.Status.Stages {
			if s.Version == ToVersion {
				first(p.gate, s.Name)
			}
		}
		for _, v := range o.Status.Versions {
			if v.Name != ToVersion {
				continue
			}
			for _, rec := range v.Stages {
				if rec.Phase == upgradev1.StagePassed {
					first(p.passed, rec.Stage)
				}
			}
			if v.Phase == upgradev1.ChannelVersionCompleted && p.versionCompleted.IsZero() {
				p.versionCompleted = now
			}
		}
	}
}

// through reports whether the release passed every stage.
func (p *promotionStamps) through() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.versionCompleted.IsZero()
}

// quietFor reports whether the informers saw no change for d.
func (p *promotionStamps) quietFor(d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.last) >= d
}

// describe says where the release stands, for an error.
func (p *promotionStamps) describe() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d gates opened, %d stages passed, %d rollouts carry the release, %d Completed", len(p.gate), len(p.passed), len(p.rolled), len(p.completed))
}

// promotions computes each stage's figures; per is the Clusters of a
// stage.
func (p *promotionStamps) promotions(created time.Time, per int) []StagePromotion {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]StagePromotion, 0, p.stages)
	previous := created
	for k := range p.stages {
		stage, ns := fmt.Sprintf("stage-%d", k), stageNamespace(k)
		gate := p.gate[stage]
		sp := StagePromotion{Stage: stage, Clusters: per, GateAfterSeconds: gate.Sub(previous).Seconds()}
		var rolled []float64
		var completed time.Time
		for key, t := range p.rolled {
			if namespaceOf(key) != ns {
				continue
			}
			rolled = append(rolled, t.Sub(gate).Seconds())
			if c := p.completed[key]; c.After(completed) {
				completed = c
			}
		}
		sort.Float64s(rolled)
		if len(rolled) > 0 {
			sp.FirstRolloutSeconds, sp.P50RolloutSeconds, sp.AllRolloutsSeconds = rolled[0], rolled[len(rolled)/2], slices.Max(rolled)
		}
		sp.AllCompletedSeconds = completed.Sub(gate).Seconds()
		sp.PassedSeconds = p.passed[stage].Sub(gate).Seconds()
		previous = p.passed[stage]
		out = append(out, sp)
	}
	return out
}

// namespaceOf returns the namespace of a namespace/name key.
func namespaceOf(key string) string {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i]
		}
	}
	return ""
}

// printChannel prints scenario 8.
func (r *Report) printChannel(printf func(string, ...any)) {
	c := r.Channel
	printf("\n8. A release through a ReleaseChannel (%d Clusters in %d stages, %d Machines, soak %.0fs per stage): through in %.1fs\n",
		c.Clusters, c.Stages, c.Machines, c.SoakSeconds, c.ThroughSeconds)
	printf("stage\tclusters\tgate after previous\tfirst rollout\tp50 rollout\tall rollouts\tall Completed\tpassed\n")
	for _, p := range c.Promotions {
		printf("%s\t%d\t%.2fs\t%.2fs\t%.2fs\t%.2fs\t%.2fs\t%.2fs\n", p.Stage, p.Clusters, p.GateAfterSeconds,
			p.FirstRolloutSeconds, p.P50RolloutSeconds, p.AllRolloutsSeconds, p.AllCompletedSeconds, p.PassedSeconds)
	}
	printf("   (the rollout columns are seconds from the stage's gate opening)\n")
	printf("   at rest for %.0fs: %d requests but the leader election's, %d on releasechannels, %d writes, %.0f reconciles of the channel; top: %s\n",
		c.IdleSeconds, c.IdleRequests, c.IdleChannelRequests, c.IdleWrites, c.IdleChannelReconciles, strings.Join(c.IdleTop, ", "))
	if c.Note != "" {
		printf("   %s\n", c.Note)
	}
}
