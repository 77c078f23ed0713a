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

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
)

const (
	// ExtensionName is the name of the ExtensionConfig that registers
	// Tollgate's in-place update extension with CAPI core
	// (Options.Extension).
	ExtensionName = "tollgate"

	// DefaultExtensionRetryAfter is how soon CAPI asks again about a
	// Machine whose in-place update is not done, in the sandbox, unless the
	// manager's options say otherwise: its rollouts take seconds.
	DefaultExtensionRetryAfter = time.Second

	// extensionDiscoveryTimeout bounds how long StartManager waits for
	// CAPI to discover the extension's handlers.
	extensionDiscoveryTimeout = time.Minute
)

// inPlaceHooks are the hooks of Tollgate's extension, as CAPI lists them in
// the ExtensionConfig's status once it has discovered them.
var inPlaceHooks = []string{"CanUpdateMachineSet", "CanUpdateMachine", "UpdateMachine"}

// serveExtension sets what the manager needs to serve the in-place update
// hooks: the sandbox's extension port, the webhooks' certificate (set with
// the webhooks) and DefaultExtensionRetryAfter unless o has its own.
func (s *Sandbox) serveExtension(o *manager.Options) {
	o.ExtensionPort = s.extensionPort
	if o.ExtensionRetryAfter == 0 {
		o.ExtensionRetryAfter = DefaultExtensionRetryAfter
	}
}

// registerExtension waits until the manager serves the extension, registers
// it with CAPI core as a user's ExtensionConfig does (config/extension:
// the namespaces labelled upgradev1.InPlaceUpdatesNamespaceLabel only), with
// the sandbox's webhook CA, and waits until CAPI has discovered its hooks.
func (s *Sandbox) registerExtension(ctx context.Context) error {
	addr := net.JoinHostPort(s.Management.Env.WebhookInstallOptions.LocalServingHost, strconv.Itoa(s.extensionPort))
	if err := waitForTLS(ctx, addr); err != nil {
		return fmt.Errorf("waiting for the in-place update extension: %w", err)
	}
	ec := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: ExtensionName},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig: runtimev1.ClientConfig{
				URL:      "https://" + addr + "/",
				CABundle: s.Management.Env.WebhookInstallOptions.LocalServingCAData,
			},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				upgradev1.InPlaceUpdatesNamespaceLabel: upgradev1.InPlaceUpdatesEnabled,
			}},
		},
	}
	mgmt := s.Management.Client
	if err := mgmt.Create(ctx, ec); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ExtensionConfig %s: %w", ExtensionName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, extensionDiscoveryTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.capiAlive(); err != nil {
			return fmt.Errorf("waiting for CAPI to discover the in-place update extension: %w", err)
		}
		err := mgmt.Get(ctx, client.ObjectKey{Name: ExtensionName}, ec)
		if err == nil && discovered(ec) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CAPI did not discover the hooks %v of ExtensionConfig %s within %s: %w (conditions %v)",
				inPlaceHooks, ExtensionName, extensionDiscoveryTimeout, errors.Join(ctx.Err(), err), ec.Status.Conditions)
		case <-tick.C: // Polling the ExtensionConfig's status, which CAPI writes.
		}
	}
}

// discovered says whether CAPI lists every hook of the extension.
func discovered(ec *runtimev1.ExtensionConfig) bool {
	hooks := make([]string, 0, len(ec.Status.Handlers))
	for _, h := range ec.Status.Handlers {
		hooks = append(hooks, h.RequestHook.Hook)
	}
	for _, h := range inPlaceHooks {
		if !slices.Contains(hooks, h) {
			return false
		}
	}
	return true
}
