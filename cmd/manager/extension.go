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

package manager

import (
	"fmt"

	"k8s.io/utils/ptr"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/inplace"
)

// Names of the in-place update handlers, as CAPI's ExtensionConfig lists
// them (<name>.<ExtensionConfig name>).
const (
	canUpdateMachineSetHandler = "can-update-machineset"
	canUpdateMachineHandler    = "can-update-machine"
	updateMachineHandler       = "update-machine"
)

// setupExtension serves CAPI's in-place update hooks (CanUpdateMachineSet,
// CanUpdateMachine, UpdateMachine) with CAPI's runtime extension server on
// o.ExtensionPort, beside the webhooks and with their certificate. Every
// replica serves them, not only the leader: the handlers read the
// apiserver and change nothing, so any replica answers alike.
func setupExtension(mgr ctrl.Manager, o Options) error {
	catalog := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(catalog); err != nil {
		return fmt.Errorf("building the runtime hook catalog: %w", err)
	}
	srv, err := server.New(server.Options{
		Catalog: catalog,
		Port:    o.ExtensionPort,
		Host:    o.WebhookHost,
		CertDir: o.WebhookCertDir,
	})
	if err != nil {
		return fmt.Errorf("creating the runtime extension server: %w", err)
	}
	// Answers are read live: an UpdateMachine answer is given on what the
	// apiserver holds now, never on a cache that may lag the rollout.
	live, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating the extension's client: %w", err)
	}
	extension := &inplace.Extension{Client: live, Claims: inplace.DefaultClaims(), RetryAfter: o.ExtensionRetryAfter}
	// The answers read a few objects (and CanUpdate dry-runs the writes
	// CAPI would make). A failure to answer fails CAPI's call, which CAPI
	// retries: it never updates a Machine Tollgate did not claim.
	timeout := ptr.To[int32](10)
	fail := ptr.To(runtimehooksv1.FailurePolicyFail)
	for _, h := range []server.ExtensionHandler{
		{Hook: runtimehooksv1.CanUpdateMachineSet, Name: canUpdateMachineSetHandler, HandlerFunc: extension.CanUpdateMachineSet, TimeoutSeconds: timeout, FailurePolicy: fail},
		{Hook: runtimehooksv1.CanUpdateMachine, Name: canUpdateMachineHandler, HandlerFunc: extension.CanUpdateMachine, TimeoutSeconds: timeout, FailurePolicy: fail},
		{Hook: runtimehooksv1.UpdateMachine, Name: updateMachineHandler, HandlerFunc: extension.UpdateMachine, TimeoutSeconds: timeout, FailurePolicy: fail},
	} {
		if err := srv.AddExtensionHandler(h); err != nil {
			return fmt.Errorf("adding the %s handler: %w", h.Name, err)
		}
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the runtime extension server: %w", err)
	}
	return nil
}
