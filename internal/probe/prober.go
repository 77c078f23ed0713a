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

package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// MaxMessageLength is the longest failure reason, in characters, as the
// reason of a failed Job (workloadjob.MaxMessageLength): shorter than the
// message fields that quote it (upgradev1.MaxMessageLength).
const MaxMessageLength = 256

var errNotProbe = errors.New("the check is neither an http nor a prometheus check")

// Prober runs http and prometheus checks.
type Prober struct {
	// Client reads Secrets of the management cluster: the Cluster's
	// kubeconfig, the headers and CA Secrets of a check. The manager's
	// client reads Secrets from the apiserver, one at a time.
	Client client.Reader

	// Transport, when set, is the base of the transports to URLs; a clone
	// of http.DefaultTransport when nil.
	Transport *http.Transport

	// Now is the clock of prometheus queries; time.Now when nil.
	Now func() time.Time
}

// Outcome is the verdict of one run of a check.
type Outcome struct {
	// Passed is true when the check passed.
	Passed bool
	// Message is why it failed, at most MaxMessageLength characters.
	Message string
}

// Run runs chk once in the Cluster clusterName, within timeout, and returns
// its verdict. Whatever goes wrong (a Secret that cannot be read, an
// endpoint that cannot be reached, an answer that cannot be judged) is a
// failure with its reason.
func (p *Prober) Run(ctx context.Context, chk *upgradev1.ClusterHealthCheck, clusterName string, timeout time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var e *upgradev1.HealthCheckEndpoint
	switch chk.Spec.Kind() {
	case upgradev1.HealthCheckKindHTTP:
		e = &chk.Spec.HTTP.HealthCheckEndpoint
	case upgradev1.HealthCheckKindPrometheus:
		e = &chk.Spec.Prometheus.HealthCheckEndpoint
	default:
		return fail("%v", errNotProbe)
	}
	ep, err := p.resolve(ctx, chk.Namespace, clusterName, e)
	if err != nil {
		return fail("%v", describeError(ctx, err, timeout))
	}
	defer ep.close()
	if e.Service != nil && ep.transport.(*headerTransport).headers.Get("Authorization") != "" {
		return fail("Secret %q sets an Authorization header, which cannot reach a Service through the workload apiserver (it authenticates the manager with it and removes it): use a url, or another header", e.HeadersSecretName)
	}
	if chk.Spec.HTTP != nil {
		return runHTTP(ctx, chk.Spec.HTTP, ep, e.Service != nil, timeout)
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	return runPrometheus(ctx, chk.Spec.Prometheus, ep, now(), timeout)
}

// fail returns a failure whose reason is cut at MaxMessageLength, keeping
// its start: a failure reason says what went wrong first.
func fail(format string, args ...any) Outcome {
	return Outcome{Message: upgradev1.Truncate(fmt.Sprintf(format, args...), MaxMessageLength)}
}

// describeError says that err is a timeout when ctx ran out.
func describeError(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within the timeout of %s: %w", timeout, err)
	}
	return err
}
