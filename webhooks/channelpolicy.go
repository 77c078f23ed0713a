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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

// validateChannelPolicy checks, against the apiserver, a policy whose
// targets come from a ReleaseChannel (targetFrom: Channel): no other
// channel's stage names it (a policy belongs to one channel).
// plan.ValidatePolicy judges the rest: it names the channel and no target of
// its own. A channel that does not exist yet, or whose stages do not name
// the policy, is a warning: GitOps applies objects in any order, and a stage
// may select the policy's Clusters by their labels.
func validateChannelPolicy(ctx context.Context, c client.Reader, p *upgradev1.TalosUpgradePolicy, specPath *field.Path) (field.ErrorList, []string, error) {
	var allErrs field.ErrorList
	var warnings []string
	if p.Spec.Channel == "" {
		return nil, nil, nil // plan.ValidatePolicy reports it.
	}
	channels := &upgradev1.ReleaseChannelList{}
	if err := c.List(ctx, channels); err != nil {
		return nil, nil, fmt.Errorf("listing ReleaseChannels: %w", err)
	}
	ref := upgradev1.PolicyReference{Namespace: p.Namespace, Name: p.Name}
	if other := channelNaming(channels.Items, p.Spec.Channel, ref); other != "" {
		allErrs = append(allErrs, field.Invalid(specPath.Child("channel"), p.Spec.Channel, fmt.Sprintf(
			"a stage of ReleaseChannel %q names this policy: a policy belongs to one channel; remove it from that channel's stages first, or set channel: %s", other, other)))
	}
	ch := &upgradev1.ReleaseChannel{}
	err := c.Get(ctx, client.ObjectKey{Name: p.Spec.Channel}, ch)
	switch {
	case apierrors.IsNotFound(err):
		warnings = append(warnings, fmt.Sprintf("spec.channel: ReleaseChannel %q does not exist yet: no Cluster of this policy gets a version until it does", p.Spec.Channel))
	case err != nil:
		return nil, nil, fmt.Errorf("getting ReleaseChannel %q: %w", p.Spec.Channel, err)
	case !channel.NamesPolicy(&ch.Spec, ref):
		warnings = append(warnings, fmt.Sprintf("spec.channel: no stage of ReleaseChannel %q names this policy: its Clusters get a version only where a stage's clusterSelector selects them", p.Spec.Channel))
	}
	return allErrs, warnings, nil
}
