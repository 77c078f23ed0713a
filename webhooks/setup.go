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
	"errors"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/internal/inventory"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/templates"
)

// DefaultControllerUsername is the user the Tollgate controller manager runs
// as in its default deployment; see WithControllerUsername.
const DefaultControllerUsername = "system:serviceaccount:tollgate-system:tollgate-controller-manager"

// errNilManager is returned by SetupWebhooksWithManager for a nil manager.
var errNilManager = errors.New("webhooks: a manager is required")

// options configures SetupWebhooksWithManager.
type options struct {
	// controllerUsername is the username of the controller's requests,
	// which may change every field of a TalosUpgrade.
	controllerUsername string
}

// Option configures SetupWebhooksWithManager.
type Option func(*options)

// WithControllerUsername sets the username (as the API server authenticates
// it, for a service account "system:serviceaccount:<namespace>:<name>") of
// the Tollgate controller. Its requests may change every field of a
// TalosUpgrade; everybody else may only change paused, cancel and bypass.
// It defaults to DefaultControllerUsername.
func WithControllerUsername(username string) Option {
	return func(o *options) {
		o.controllerUsername = username
	}
}

// SetupWebhooksWithManager registers the defaulting and validating webhooks
// of TalosUpgradePolicy, TalosUpgrade, ReleaseChannel and
// ClusterHealthCheck, the validating webhook of the policy label on CAPI
// Clusters, and those that refuse the changes of MachineDeployments and
// TalosControlPlanes CAPI would carry out by replacing Machines a policy
// keeps (Replacements), with the
// manager's webhook server. Lookups go through the manager's cached client,
// by the field indexes of internal/index, which the manager's cache must
// have (index.Add; cmd/manager adds them), and what Clusters and their
// Machines run through an inventory fed by the manager's informers: an
// admission reads the rollouts of one policy or Cluster, never a whole
// namespace, and judges a policy's 1,000 Clusters without reading their
// Machines.
func SetupWebhooksWithManager(ctx context.Context, mgr ctrl.Manager, opts ...Option) error {
	if mgr == nil {
		return errNilManager
	}
	o := options{controllerUsername: DefaultControllerUsername}
	for _, opt := range opts {
		opt(&o)
	}
	var c client.Reader = mgr.GetClient()
	versions := inventory.New()
	if err := versions.Watch(ctx, mgr.GetCache()); err != nil {
		return err
	}

	// The defaulting webhooks admit what does not decode, for the schema to
	// refuse it naming the field (defaultingWebhook).
	policy := &TalosUpgradePolicy{Client: c, Versions: versions, SecretReader: mgr.GetAPIReader(), Releases: &talos.ReleaseLister{},
		ControlPlanes: templates.Reader{Client: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), Kinds: &templates.KindCache{}}}
	if err := registerDefaulter(mgr, &upgradev1.TalosUpgradePolicy{}, policy); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &upgradev1.TalosUpgradePolicy{}).WithValidator(policy).Complete(); err != nil {
		return err
	}
	upgrade := &TalosUpgrade{Client: c, Versions: versions, ControllerUsername: o.controllerUsername}
	if err := registerDefaulter(mgr, &upgradev1.TalosUpgrade{}, upgrade); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &upgradev1.TalosUpgrade{}).WithValidator(upgrade).Complete(); err != nil {
		return err
	}
	channel := &ReleaseChannel{Client: c}
	if err := ctrl.NewWebhookManagedBy(mgr, &upgradev1.ReleaseChannel{}).WithDefaulter(channel).WithValidator(channel).Complete(); err != nil {
		return err
	}
	check := &ClusterHealthCheck{}
	if err := registerDefaulter(mgr, &upgradev1.ClusterHealthCheck{}, check); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &upgradev1.ClusterHealthCheck{}).WithValidator(check).Complete(); err != nil {
		return err
	}
	cluster := &Cluster{Client: c, Versions: versions}
	if err := ctrl.NewWebhookManagedBy(mgr, &clusterv1.Cluster{}).
		WithValidator(cluster).
		WithValidatorCustomPath(clusterValidatePath).
		Complete(); err != nil {
		return err
	}
	replacements := &Replacements{Client: mgr.GetClient(), Claims: inplace.DefaultClaims()}
	if err := ctrl.NewWebhookManagedBy(mgr, &clusterv1.MachineDeployment{}).
		WithValidator(replacements).
		WithValidatorCustomPath(machineDeploymentReplacementsPath).
		Complete(); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(talosControlPlaneReplacementsPath, &webhook.Admission{Handler: &TalosControlPlaneReplacements{Replacements: replacements}})
	return nil
}
