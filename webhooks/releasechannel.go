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

package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-upgrade-tollgate-dev-v1alpha1-releasechannel,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=releasechannels,versions=v1alpha1,name=validation.releasechannel.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:verbs=create;update,path=/mutate-upgrade-tollgate-dev-v1alpha1-releasechannel,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=releasechannels,versions=v1alpha1,name=default.releasechannel.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10

// ReleaseChannel defaults and validates ReleaseChannels. Besides the rules
// of the spec on its own (channel.ValidateSpec: an order with a cycle, a
// policy twice, a soak or window that cannot be met, a query that does not
// parse), it refuses a policy in two channels, a new version anywhere but
// last, and an approval for a stage that is not waiting for one; it records
// who made each approval. A policy that does not exist yet is a warning:
// the channel's Ready condition waits for it.
type ReleaseChannel struct {
	// Client reads the other channels and the policies.
	Client client.Reader
	// Now tells the time the stages' windows must open from; time.Now when
	// nil.
	Now func() time.Time
}

var (
	_ admission.Defaulter[*upgradev1.ReleaseChannel] = &ReleaseChannel{}
	_ admission.Validator[*upgradev1.ReleaseChannel] = &ReleaseChannel{}
)

// Default records who made each approval that is new or changed
// (spec.approvals[].requestedBy, the user the API server authenticated);
// an approval an update leaves as it is keeps who made it.
func (w *ReleaseChannel) Default(ctx context.Context, c *upgradev1.ReleaseChannel) error {
	old := oldChannel(ctx)
	user := ""
	if req, err := admission.RequestFromContext(ctx); err == nil {
		user = req.UserInfo.Username
	}
	for i := range c.Spec.Approvals {
		a := &c.Spec.Approvals[i]
		if o := approvalOf(old, a.Stage, a.Version); o != nil && sameDecision(o, a) {
			a.RequestedBy = o.RequestedBy
			continue
		}
		a.RequestedBy = user
	}
	return nil
}

// oldChannel returns the channel an admission request updates, read from
// the request's old object; nil on a create.
func oldChannel(ctx context.Context) *upgradev1.ReleaseChannel {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	c := &upgradev1.ReleaseChannel{}
	if err := json.Unmarshal(req.OldObject.Raw, c); err != nil {
		return nil
	}
	return c
}

// ValidateCreate validates a new channel.
func (w *ReleaseChannel) ValidateCreate(ctx context.Context, c *upgradev1.ReleaseChannel) (admission.Warnings, error) {
	return w.validate(ctx, nil, c)
}

// ValidateUpdate validates a change to a channel.
func (w *ReleaseChannel) ValidateUpdate(ctx context.Context, oldC, newC *upgradev1.ReleaseChannel) (admission.Warnings, error) {
	return w.validate(ctx, oldC, newC)
}

// ValidateDelete allows every deletion: the policies keep what their
// Clusters run, and say the channel is gone.
func (w *ReleaseChannel) ValidateDelete(_ context.Context, _ *upgradev1.ReleaseChannel) (admission.Warnings, error) {
	return nil, nil
}

func (w *ReleaseChannel) validate(ctx context.Context, oldC, newC *upgradev1.ReleaseChannel) (admission.Warnings, error) {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	specPath := field.NewPath("spec")
	allErrs := channel.ValidateSpec(&newC.Spec, now(), specPath)
	allErrs = append(allErrs, validateNewVersions(oldC, newC, specPath.Child("versions"))...)
	allErrs = append(allErrs, validateApprovalsWait(oldC, newC, specPath.Child("approvals"))...)
	errs, warnings, err := w.validatePolicies(ctx, newC, specPath.Child("stages"))
	if err != nil {
		return warnings, apierrors.NewInternalError(err)
	}
	allErrs = append(allErrs, errs...)
	if newC.Spec.Paused && (oldC == nil || !oldC.Spec.Paused) {
		warnings = append(warnings, "spec.paused is true: no version enters or passes a stage until it is false; rollouts already granted a version go on")
	}
	return warnings, invalid("ReleaseChannel", newC.Name, allErrs)
}

// validateNewVersions refuses a version added anywhere but after every
// version the channel had: spec.versions is newest last, and a version
// slipped in before others would come after them.
func validateNewVersions(oldC, newC *upgradev1.ReleaseChannel, fldPath *field.Path) field.ErrorList {
	if oldC == nil {
		return nil
	}
	known := map[string]bool{}
	for _, v := range oldC.Spec.Versions {
		known[v.Name()] = true
	}
	for _, v := range oldC.Status.Versions {
		known[v.Name] = true
	}
	lastKnown := -1
	for i, v := range newC.Spec.Versions {
		if known[v.Name()] {
			lastKnown = i
		}
	}
	var allErrs field.ErrorList
	for i, v := range newC.Spec.Versions[:lastKnown+1] {
		if !known[v.Name()] {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), v.Name(), fmt.Sprintf(
				"a new version goes last: spec.versions is newest last, and %s, added before %s, would enter the channel after it; add it at the end, or remove the versions after it",
				v.Name(), newC.Spec.Versions[lastKnown].Name())))
		}
	}
	return allErrs
}

// validateApprovalsWait refuses an approval that is new or changed for a
// stage that is not waiting for one: a version's approval is given once
// the stage soaked it and its analysis passed, and a decision recorded
// cannot change.
func validateApprovalsWait(oldC, newC *upgradev1.ReleaseChannel, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range newC.Spec.Approvals {
		a := &newC.Spec.Approvals[i]
		if o := approvalOf(oldC, a.Stage, a.Version); o != nil && sameDecision(o, a) {
			continue
		}
		var rec *upgradev1.VersionStageStatus
		if oldC != nil {
			rec = stageRecord(&oldC.Status, a.Version, a.Stage)
		}
		path := fldPath.Index(i)
		switch {
		case rec == nil:
			allErrs = append(allErrs, field.Invalid(path, fmt.Sprintf("%s/%s", a.Stage, a.Version), fmt.Sprintf(
				"stage %s is not waiting for an approval of %s: the version has not reached it (status.versions); approve once the stage soaked it and its analysis passed (kubectl tollgate approve)", a.Stage, a.Version)))
		case rec.Approval != nil && rec.Approval.Decision != "":
			allErrs = append(allErrs, field.Invalid(path, fmt.Sprintf("%s/%s", a.Stage, a.Version), fmt.Sprintf(
				"stage %s is not waiting for an approval of %s: %s decided %s at %s, which cannot change", a.Stage, a.Version, orSomebody(rec.Approval.RequestedBy), rec.Approval.Decision, rec.Approval.DecidedTime)))
		case rec.Phase != upgradev1.StageWaitingForApproval:
			allErrs = append(allErrs, field.Invalid(path, fmt.Sprintf("%s/%s", a.Stage, a.Version), fmt.Sprintf(
				"stage %s is not waiting for an approval of %s: it is %s; approve once the stage soaked it and its analysis passed (phase WaitingForApproval)", a.Stage, a.Version, rec.Phase)))
		}
	}
	return allErrs
}

// validatePolicies refuses a policy in two channels: named by a stage of
// another channel, or taking its target from another channel. A policy
// that does not exist yet, or whose target does not come from this
// channel, is a warning.
func (w *ReleaseChannel) validatePolicies(ctx context.Context, c *upgradev1.ReleaseChannel, fldPath *field.Path) (field.ErrorList, admission.Warnings, error) {
	others := &upgradev1.ReleaseChannelList{}
	if err := w.Client.List(ctx, others); err != nil {
		return nil, nil, fmt.Errorf("listing ReleaseChannels: %w", err)
	}
	var allErrs field.ErrorList
	var warnings admission.Warnings
	for i, s := range c.Spec.Stages {
		for j, ref := range s.Policies {
			path := fldPath.Index(i).Child("policies").Index(j)
			if other := channelNaming(others.Items, c.Name, ref); other != "" {
				allErrs = append(allErrs, field.Invalid(path, ref.String(), fmt.Sprintf(
					"policy %s is in a stage of ReleaseChannel %q already: a policy belongs to one channel; remove it there first", ref, other)))
				continue
			}
			p := &upgradev1.TalosUpgradePolicy{}
			err := w.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, p)
			switch {
			case apierrors.IsNotFound(err):
				warnings = append(warnings, fmt.Sprintf("%s: TalosUpgradePolicy %s does not exist yet: its Clusters join stage %s once it does (and takes its target from this channel)", path, ref, s.Name))
			case err != nil:
				return nil, nil, fmt.Errorf("getting TalosUpgradePolicy %s: %w", ref, err)
			case p.Spec.ChannelDriven() && p.Spec.Channel != c.Name:
				allErrs = append(allErrs, field.Invalid(path, ref.String(), fmt.Sprintf(
					"policy %s takes its target from ReleaseChannel %q: a policy belongs to one channel; change its spec.channel first", ref, p.Spec.Channel)))
			case !p.Spec.ChannelDriven():
				warnings = append(warnings, fmt.Sprintf("%s: TalosUpgradePolicy %s does not take its target from a channel: set targetFrom: Channel and channel: %s on it for its Clusters to join stage %s", path, ref, c.Name, s.Name))
			}
		}
	}
	return allErrs, warnings, nil
}

// channelNaming returns the name of another channel than self a stage of
// which names the policy, or "".
func channelNaming(channels []upgradev1.ReleaseChannel, self string, ref upgradev1.PolicyReference) string {
	for i := range channels {
		if channels[i].Name != self && channel.NamesPolicy(&channels[i].Spec, ref) {
			return channels[i].Name
		}
	}
	return ""
}

// approvalOf returns the approval of a channel for a version in a stage,
// or nil (also for a nil channel).
func approvalOf(c *upgradev1.ReleaseChannel, stage, version string) *upgradev1.StageApproval {
	if c == nil {
		return nil
	}
	for i := range c.Spec.Approvals {
		if a := &c.Spec.Approvals[i]; a.Stage == stage && a.Version == version {
			return a
		}
	}
	return nil
}

// sameDecision reports whether two approvals decide the same for the same
// reason.
func sameDecision(a, b *upgradev1.StageApproval) bool {
	decision := func(d upgradev1.ApprovalDecision) upgradev1.ApprovalDecision {
		if d == "" {
			return upgradev1.ApprovalApprove
		}
		return d
	}
	return decision(a.Decision) == decision(b.Decision) && a.Reason == b.Reason
}

// stageRecord returns the record of a version in a stage, or nil.
func stageRecord(st *upgradev1.ReleaseChannelStatus, version, stage string) *upgradev1.VersionStageStatus {
	for i := range st.Versions {
		v := &st.Versions[i]
		if v.Name != version {
			continue
		}
		for j := range v.Stages {
			if v.Stages[j].Stage == stage {
				return &v.Stages[j]
			}
		}
	}
	return nil
}

func orSomebody(user string) string {
	if user == "" {
		return "the controller"
	}
	return user
}
