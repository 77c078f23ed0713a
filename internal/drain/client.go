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

package drain

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NewClientset returns a clientset for draining the Nodes of the cluster
// cfg points at. An eviction refused by a PodDisruptionBudget comes back as
// 429 Too Many Requests with a Retry-After header, which client-go would
// honour by sleeping and retrying inside the call, up to ten times; the
// drain is non-blocking instead: the refusal is reported at once and the
// eviction is tried again on the next reconcile.
func NewClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return noRetryAfter{rt} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a clientset for the drain: %w", err)
	}
	return cs, nil
}

// noRetryAfter drops the Retry-After header of 429 responses.
type noRetryAfter struct{ next http.RoundTripper }

func (t noRetryAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}
