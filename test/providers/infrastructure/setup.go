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

package infrastructure

import (
	"context"
	"path/filepath"
	"runtime"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/controllers/talossimcluster"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/controllers/talossimmachine"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/webhooks"
)

// Options configure Setup.
type Options struct {
	// Hosts runs the machines, for example hosts.NewSimulators(...).
	Hosts hosts.Hosts
	// WatchFilterValue, when set, limits the controllers to objects with
	// the cluster.x-k8s.io/watch-filter label of that value.
	WatchFilterValue string
	// Controller are the options of both controllers.
	Controller controller.Options
}

// Setup registers the TalosSimCluster, TalosSimMachine and
// TalosSimCloudMachine controllers and the webhooks with mgr, whose scheme
// must hold the kinds of api/v1alpha1 and CAPI's core kinds, and whose
// webhook server serves the configurations of WebhookDirectory
// (envtest.Management.ServeWebhooks). Secrets are read from mgr's API
// reader, so the manager caches none.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	kinds := []talossimmachine.Kind{talossimmachine.MachineKind, talossimmachine.CloudMachineKind}
	errs := make([]error, 0, 2+len(kinds))
	errs = append(errs,
		webhooks.Setup(mgr),
		(&talossimcluster.Reconciler{
			Client:           mgr.GetClient(),
			WatchFilterValue: o.WatchFilterValue,
		}).SetupWithManager(ctx, mgr, o.Controller),
	)
	for _, kind := range kinds {
		errs = append(errs, (&talossimmachine.Reconciler{
			Kind:             kind,
			Client:           mgr.GetClient(),
			APIReader:        mgr.GetAPIReader(),
			Hosts:            o.Hosts,
			WatchFilterValue: o.WatchFilterValue,
		}).SetupWithManager(ctx, mgr, o.Controller))
	}

	return kerrors.NewAggregate(errs)
}

// CRDDirectory is the directory of the provider's CRDs, for
// envtest.WithCRDDirectories.
func CRDDirectory() string {
	_, file, _, _ := runtime.Caller(0)

	return filepath.Join(filepath.Dir(file), "config", "crd")
}

// WebhookDirectory is the directory of the provider's webhook
// configurations, for envtest.Management.ServeWebhooks.
func WebhookDirectory() string {
	_, file, _, _ := runtime.Caller(0)

	return filepath.Join(filepath.Dir(file), "config", "webhook")
}
