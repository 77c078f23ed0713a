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

package talosupgrade

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// TestRepeatable: an attempt of an upgrade call is made again only when the
// node did not answer before the install was requested (its version read,
// its image pull); never once the install request was sent, nor after an
// answer of the node.
func TestRepeatable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "success", err: nil, want: false},
		{name: "lost answer to the pull", err: fmt.Errorf("pulling image: %w", talos.ErrUnreachable), want: true},
		{name: "pull timed out", err: fmt.Errorf("pulling image: %w", talos.ErrDeadlineExceeded), want: true},
		{name: "install request sent, answer lost", err: fmt.Errorf("%w: %w", talos.ErrUpgradeInterrupted, talos.ErrUnreachable), want: false},
		{name: "install failed", err: fmt.Errorf("%w: exit code 1", talos.ErrUpgradeFailed), want: false},
		{name: "TLS", err: talos.ErrTLS, want: false},
		{name: "reboots itself", err: talos.ErrRebootsItself, want: false},
		{name: "the node's own error", err: errors.New("image not found"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(repeatable(tt.err)).To(Equal(tt.want))
		})
	}
}

// TestUpgradeCallGivesUpAfterNodeUnreachableTimeout: an attempt that keeps
// failing in a repeatable way is the call's failure once the node has not
// answered for retryFor, with the last error.
func TestUpgradeCallGivesUpAfterNodeUnreachableTimeout(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Now: time.Now, calls: newUpgradeCalls()}
	attempts := 0
	_, err := r.callUpgradeRepeating(context.Background(), &disruption.UpgradeCall{}, 0, func() (talos.UpgradeResult, error) {
		attempts++
		return talos.UpgradeResult{}, fmt.Errorf("pulling image: %w", talos.ErrUnreachable)
	})
	g.Expect(attempts).To(Equal(1))
	g.Expect(err).To(MatchError(talos.ErrUnreachable))
	g.Expect(err.Error()).To(ContainSubstring("before the install, which was never requested"))
}
