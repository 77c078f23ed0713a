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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// maxBody is how much of an answer's body is read and matched.
const maxBody = 64 << 10

// runHTTP sends the request of h to ep and judges the answer.
func runHTTP(ctx context.Context, h *upgradev1.HTTPHealthCheck, ep *endpoint, viaProxy bool, timeout time.Duration) Outcome {
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, ep.url.String(), nil)
	if err != nil {
		return fail("building the request to %s: %v", ep, err)
	}
	c := &http.Client{Transport: ep.transport, CheckRedirect: ep.checkRedirect}
	resp, err := c.Do(req)
	if err != nil {
		return fail("%s %s: %v", method, ep, describeError(ctx, err, timeout))
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fail("%s %s: reading the answer of HTTP %s: %v", method, ep, resp.Status, describeError(ctx, err, timeout))
	}
	body := string(raw)
	if !statusExpected(resp.StatusCode, h.ExpectedStatusCodes) {
		return fail("HTTP %s%s: %s", resp.Status, redirectNote(resp), describeBody(body, viaProxy, resp))
	}
	if b := h.Body; b != nil {
		if b.Contains != "" && !strings.Contains(body, b.Contains) {
			return fail("HTTP %s without %q in its body: %s", resp.Status, b.Contains, describeBody(body, false, resp))
		}
		if b.Regex != "" {
			re, err := regexp.Compile(b.Regex)
			if err != nil {
				return fail("body.regex: %v", err)
			}
			if !re.MatchString(body) {
				return fail("HTTP %s with a body that does not match %q: %s", resp.Status, b.Regex, describeBody(body, false, resp))
			}
		}
	}
	return Outcome{Passed: true}
}

// statusExpected reports whether code is one of expected, or a 2xx when
// expected is empty.
func statusExpected(code int, expected []int32) bool {
	if len(expected) == 0 {
		return code >= 200 && code < 300
	}
	return slices.Contains(expected, int32(code)) //nolint:gosec // An HTTP status code fits.
}

// redirectNote says where a redirect that was not followed led.
func redirectNote(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode >= 400 {
		return ""
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		return fmt.Sprintf(" (a redirect to %s, not followed: another host)", loc)
	}
	return ""
}

// describeBody returns the start of a body on one line; through the Service
// proxy, the message of the apiserver's own error (no endpoint, an endpoint
// that cannot be reached) rather than its JSON.
func describeBody(body string, viaProxy bool, resp *http.Response) string {
	if viaProxy && resp.StatusCode >= 500 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		status := metav1.Status{}
		if err := json.Unmarshal([]byte(body), &status); err == nil && status.Kind == "Status" && status.Message != "" {
			return "the workload apiserver says: " + status.Message
		}
	}
	if body = strings.Join(strings.Fields(body), " "); body == "" {
		return "(empty body)"
	}
	return body
}
