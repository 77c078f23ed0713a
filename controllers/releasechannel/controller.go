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

package releasechannel

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/internal/probe"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

var errNilClient = errors.New("the ReleaseChannel controller needs a client")

// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=releasechannels,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=releasechannels/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgradepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgrades,verbs=get;list;watch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=clusterhealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;machines,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconciler reconciles ReleaseChannel objects.
type Reconciler struct {
	// Client reads and writes through the manager's cache.
	Client client.Client
	// APIReader reads Secrets live (the pull Secret of a followed
	// repository), so that no Secret is cached.
	APIReader client.Reader
	// WatchFilterValue is the value of the cluster.x-k8s.io/watch-filter
	// label that channels, and the Clusters of their stages, must carry to
	// be served by this manager; empty for all.
	WatchFilterValue string
	// Recorder records events on channels; none are recorded when nil.
	Recorder events.EventRecorder
	// Prober runs the analyses' queries and health checks; one reading
	// Secrets with Client when nil.
	Prober *probe.Prober
	// Releases lists the releases of followed repositories; a lister of
	// its own when nil.
	Releases *talos.ReleaseLister
	// Clock tells the time; the real clock when nil.
	Clock clock.PassiveClock
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}
	if r.Prober == nil {
		r.Prober = &probe.Prober{Client: r.Client}
	}
	if r.Releases == nil {
		r.Releases = &talos.ReleaseLister{}
	}
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	inShard := predicates.ResourceHasFilterLabel(mgr.GetScheme(), ctrl.LoggerFrom(ctx), r.WatchFilterValue)
	err := ctrl.NewControllerManagedBy(mgr).
		// The controller's own status writes do not bring it back: only a
		// new spec (versions, stages, approvals) or a new object does.
		For(&upgradev1.ReleaseChannel{}, builder.WithPredicates(inShard, predicate.GenerationChangedPredicate{})).
		Watches(&upgradev1.TalosUpgrade{}, handler.EnqueueRequestsFromMapFunc(r.upgradeToChannel), builder.WithPredicates(rolloutMoved)).
		Watches(&upgradev1.TalosUpgradePolicy{}, handler.EnqueueRequestsFromMapFunc(r.policyToChannels)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToChannel), builder.WithPredicates(clusterLabelsChanged)).
		WithOptions(options).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the ReleaseChannel controller: %w", err)
	}
	return nil
}

// scope is what one reconcile of a channel works on.
type scope struct {
	// channel is the channel, as the reconcile changes it; its status is
	// patched at the end.
	channel *upgradev1.ReleaseChannel
	// now is the time of the reconcile.
	now time.Time
	// graph is the order of the stages, read first.
	graph channel.Graph
	// members are the Clusters of each stage and what stands in the way
	// of the stages resolving, read by readMembers.
	members members
	// offered are the versions the channel carries now, oldest first, and
	// fromSpec whether they are spec.versions: set by offer.
	offered  []upgradev1.ChannelVersion
	fromSpec bool
	// followAgain is when the followed repository is listed next; zero
	// without follow. Set by offer.
	followAgain time.Duration
	// events are to be recorded once the status that records what they
	// say is written.
	events []channel.Event
}

// Reconcile moves a channel's versions through its stages.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	ch := &upgradev1.ReleaseChannel{}
	if err := r.Client.Get(ctx, req.NamespacedName, ch); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading ReleaseChannel %s: %w", req.Name, err)
	}
	if !ch.DeletionTimestamp.IsZero() {
		// The policies keep what their Clusters run and say the channel is
		// gone; nothing of the channel's is elsewhere.
		return ctrl.Result{}, nil
	}
	if r.WatchFilterValue != "" && ch.Labels[clusterv1.WatchLabel] != r.WatchFilterValue {
		// Another shard's (a rollout or a Cluster of this shard mapped to
		// it): its manager serves it.
		return ctrl.Result{}, nil
	}
	// The record is written once, fenced (write.go); what the plan asks to
	// record as events, only once it is.
	base := ch.DeepCopy()
	s := &scope{channel: ch, now: r.now()}
	defer func() {
		if reterr == nil {
			ch.Status.ObservedGeneration = ch.Generation
		}
		if err := r.write(ctx, base, ch); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
			return
		}
		r.record(ctx, ch, s.events)
	}()

	s.events = append(s.events, r.restoreLog(ctx, ch)...)
	var err error
	if invalid := channel.ValidateSpec(&ch.Spec, s.now, field.NewPath("spec")); len(invalid) > 0 {
		// A spec the webhook would refuse (it was bypassed): no gate opens
		// on it.
		setInvalid(ch, invalid)
		return ctrl.Result{}, nil
	}
	if s.graph, err = channel.NewGraph(ch.Spec.Stages); err != nil {
		setInvalid(ch, field.ErrorList{field.Invalid(field.NewPath("spec", "stages"), "", err.Error())})
		return ctrl.Result{}, nil
	}
	// Read every phase's input first: a plan on a partial world would open
	// gates it must not.
	if s.members, err = r.readMembers(ctx, ch); err != nil {
		return ctrl.Result{}, err
	}
	r.offer(ctx, s)
	r.measure(ctx, s)
	// The measurements took time: the plan judges them at the time after.
	s.now = r.now()

	res := channel.Plan(&ch.Spec, s.graph, &ch.Status, channel.Observed{
		Channel: ch.Name, Now: s.now, Offered: s.offered, FromSpec: s.fromSpec, Stages: s.members.world(ch, s.now),
	})
	s.events = append(s.events, res.Events...)
	conditions.Set(ch, res.Promoting)
	setReady(ch, s.members.problems)
	log := ctrl.LoggerFrom(ctx)
	log.V(4).Info("Planned promotions", "ReleaseChannel", klog.KObj(ch), "promoting", res.Promoting.Reason, "requeueAfter", res.RequeueAfter)
	return util.LowestNonZeroResult(ctrl.Result{RequeueAfter: res.RequeueAfter}, ctrl.Result{RequeueAfter: s.followAgain}), nil
}
