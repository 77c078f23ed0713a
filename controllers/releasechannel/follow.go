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
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// baselineRetry is how soon a channel with no version and no Machine
// reporting its Talos version looks again.
const baselineRetry = time.Minute

// maxSeenReleases bounds status.follow.releases (its CRD limit).
const maxSeenReleases = 256

// offer sets the versions the channel carries now: spec.versions, or, for a
// channel that follows releases, the versions it carried so far and the
// newest release the rules allow from the newest of them once it is
// minReleaseAge old. The repository is listed when a check is due; one
// that cannot be listed is the FollowingReleases condition, and no version
// enters meanwhile.
func (r *Reconciler) offer(ctx context.Context, s *scope) {
	ch := s.channel
	f := ch.Spec.Follow
	if f == nil {
		s.offered, s.fromSpec = ch.Spec.Versions, true
		ch.Status.Follow = nil
		conditions.Delete(ch, upgradev1.PolicyFollowingReleasesCondition)
		return
	}
	for _, v := range ch.Status.Versions {
		s.offered = append(s.offered, v.ChannelVersion)
	}
	if ch.Status.Follow == nil {
		ch.Status.Follow = &upgradev1.FollowStatus{}
	}
	st := ch.Status.Follow
	repo := cmp.Or(f.Repository, talos.GHCRInstallerRepository)
	interval := channel.CheckInterval(&f.FollowSpec)
	nextCheck := interval
	if st.LastCheckTime == nil || s.now.Sub(st.LastCheckTime.Time) >= interval {
		if err := r.checkReleases(ctx, ch, repo, s.now); err != nil {
			r.setFollowing(ch, metav1.ConditionFalse, upgradev1.ReleasesUnavailableReason, fmt.Sprintf("listing the releases of %s: %v; no new version enters meanwhile", repo, err))
			s.followAgain = interval
			return
		}
	} else {
		nextCheck = interval - s.now.Sub(st.LastCheckTime.Time)
	}
	from := newestTalos(ch)
	if from == "" {
		from = r.baseline(ctx, s)
	}
	if from == "" {
		r.setFollowing(ch, metav1.ConditionFalse, upgradev1.NoFollowBaselineReason,
			"the channel carries no Talos version yet and no Machine of its Clusters reports one: the releases are followed from the lowest version its Clusters run")
		s.followAgain = min(baselineRetry, nextCheck)
		return
	}
	choice := channel.ChooseRelease(&f.FollowSpec, st, from, s.now)
	st.Current, st.TooYoung, st.Next = from, choice.TooYoung, ""
	if len(choice.TooYoung) > 0 {
		st.Next = choice.TooYoung[0]
	}
	if choice.Chosen != "" && talos.Newer(choice.Chosen, from) {
		s.offered = append(s.offered, upgradev1.ChannelVersion{TalosVersion: choice.Chosen})
		st.Current = choice.Chosen
	}
	st.Releases = slices.DeleteFunc(st.Releases, func(rel upgradev1.SeenRelease) bool { return talos.Newer(st.Current, rel.Version) })
	s.followAgain = nextCheck
	if !choice.Matures.IsZero() {
		s.followAgain = min(nextCheck, max(choice.Matures.Sub(s.now), time.Second))
		r.setFollowing(ch, metav1.ConditionTrue, upgradev1.WaitingForReleaseAgeReason, fmt.Sprintf(
			"following the releases of %s (allow: %s) from %s; %s is younger than minReleaseAge, it comes of age at %s",
			repo, f.Allow, st.Current, st.Next, choice.Matures.UTC().Format(time.RFC3339)))
		return
	}
	r.setFollowing(ch, metav1.ConditionTrue, upgradev1.UpToDateReason, fmt.Sprintf(
		"following the releases of %s (allow: %s): the newest allowed is %s (latest in the repository: %s)", repo, f.Allow, st.Current, orNone(st.Latest)))
}

// checkReleases lists the repository and records the stable releases newer
// than the current one seen for the first time, with their image's
// creation time when the registry gives one.
func (r *Reconciler) checkReleases(ctx context.Context, ch *upgradev1.ReleaseChannel, repo string, now time.Time) error {
	st := ch.Status.Follow
	keychain, err := r.keychain(ctx, ch)
	if err != nil {
		return err
	}
	releases, err := r.Releases.List(ctx, repo, keychain)
	if err != nil {
		return err
	}
	st.LastCheckTime = &metav1.Time{Time: now}
	if len(releases) > 0 {
		st.Latest = releases[len(releases)-1]
	}
	known := map[string]bool{}
	for _, rel := range st.Releases {
		known[rel.Version] = true
	}
	for _, v := range releases {
		if known[v] || (st.Current != "" && !talos.Newer(v, st.Current)) || len(st.Releases) >= maxSeenReleases {
			continue
		}
		rel := upgradev1.SeenRelease{Version: v, FirstSeen: metav1.Time{Time: now}}
		if created, err := talos.ReleaseCreated(ctx, repo, v, keychain, now); err == nil && !created.IsZero() {
			rel.Created = &metav1.Time{Time: created}
		}
		st.Releases = append(st.Releases, rel)
	}
	return nil
}

// keychain returns the credentials of the follow's pull Secret, read live,
// or nil for anonymous access.
func (r *Reconciler) keychain(ctx context.Context, ch *upgradev1.ReleaseChannel) (authn.Keychain, error) {
	ref := ch.Spec.Follow.PullSecretRef
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading the pull Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return talos.KeychainFromSecret(secret)
}

// baseline returns the lowest Talos version the Machines of the channel's
// Clusters report, canonical, or "" when none reports one.
func (r *Reconciler) baseline(ctx context.Context, s *scope) string {
	lowest := ""
	for _, stage := range s.members.stages {
		for _, m := range stage {
			machines := &clusterv1.MachineList{}
			if err := r.Client.List(ctx, machines, client.InNamespace(m.cluster.Namespace), client.MatchingFields{index.MachineClusterNameField: m.cluster.Name}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Listing the Machines of a Cluster for the release baseline", "Cluster", m.cluster)
				return ""
			}
			for _, v := range plan.MachineVersions(machines.Items) {
				if lowest == "" || talos.Newer(lowest, v) {
					lowest = v
				}
			}
		}
	}
	if lowest == "" {
		return ""
	}
	canonical, err := talos.CanonicalVersion(lowest)
	if err != nil {
		return ""
	}
	return canonical
}

// newestTalos returns the Talos version of the newest version the channel
// carried, or "".
func newestTalos(ch *upgradev1.ReleaseChannel) string {
	for i := len(ch.Status.Versions) - 1; i >= 0; i-- {
		if v := ch.Status.Versions[i].TalosVersion; v != "" {
			return v
		}
	}
	return ""
}

// setFollowing sets the FollowingReleases condition.
func (r *Reconciler) setFollowing(ch *upgradev1.ReleaseChannel, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(ch, metav1.Condition{Type: upgradev1.PolicyFollowingReleasesCondition, Status: status, Reason: reason, Message: message})
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}
