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

package channel

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Claims returns the stages that claim a Cluster of the policy with the
// given labels: the stage that names the policy, and every stage whose
// clusterSelector matches the labels. The Cluster belongs to a stage only
// when exactly one claims it (StageOf). A clusterSelector that does not
// parse claims nothing (the webhook refuses it).
func Claims(spec *upgradev1.ReleaseChannelSpec, policy upgradev1.PolicyReference, clusterLabels map[string]string) []string {
	var claims []string
	for i := range spec.Stages {
		s := &spec.Stages[i]
		if namesPolicy(s, policy) || selects(s.ClusterSelector, clusterLabels) {
			claims = append(claims, s.Name)
		}
	}
	return claims
}

// StageOf returns the stage a Cluster of the policy with the given labels
// belongs to, and false when no stage, or more than one, claims it: a
// Cluster two stages claim gets no version until one does.
func StageOf(spec *upgradev1.ReleaseChannelSpec, policy upgradev1.PolicyReference, clusterLabels map[string]string) (string, bool) {
	claims := Claims(spec, policy, clusterLabels)
	if len(claims) != 1 {
		return "", false
	}
	return claims[0], true
}

// NamesPolicy reports whether a stage of the channel names the policy.
func NamesPolicy(spec *upgradev1.ReleaseChannelSpec, policy upgradev1.PolicyReference) bool {
	for i := range spec.Stages {
		if namesPolicy(&spec.Stages[i], policy) {
			return true
		}
	}
	return false
}

func namesPolicy(s *upgradev1.ChannelStage, policy upgradev1.PolicyReference) bool {
	for _, p := range s.Policies {
		if p == policy {
			return true
		}
	}
	return false
}

// selects reports whether a clusterSelector selects a Cluster with the given
// labels: an empty selector selects every Cluster, as in Kubernetes; an
// unset or malformed one selects none.
func selects(sel *metav1.LabelSelector, clusterLabels map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(clusterLabels))
}
