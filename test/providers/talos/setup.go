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

package talos

import (
	"context"
	"path/filepath"
	"runtime"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/providers/talos/controllers/talosconfig"
	"github.com/tollgate-dev/tollgate/test/providers/talos/controllers/taloscontrolplane"
	"github.com/tollgate-dev/tollgate/test/providers/talos/webhooks"
)

// Options configure Setup.
type Options struct {
	// Etcd reads and changes the etcd members when a control-plane Machine
	// is removed; a TalosEtcd reading the manager's API reader when nil.
	Etcd taloscontrolplane.Etcd
	// ScaleDown is how the control-plane stand-in takes a Machine out:
	// taloscontrolplane.LeaveEtcdFirst as the released provider (v0.5.x)
	// when empty, or taloscontrolplane.PreTerminateHook as its unreleased
	// variant.
	ScaleDown taloscontrolplane.ScaleDown
	// TalosAPIPort is the Talos API port of the default Etcd,
	// taloscontrolplane.DefaultTalosAPIPort when zero.
	TalosAPIPort int
	// WatchFilterValue, when set, limits the controllers to objects with
	// the cluster.x-k8s.io/watch-filter label of that value.
	WatchFilterValue string
	// Controller are the options of both controllers.
	Controller controller.Options
}

// AddToScheme adds the kinds of both stand-ins to a scheme.
func AddToScheme(s *kruntime.Scheme) error {
	return kerrors.NewAggregate([]error{bootstrapv1.AddToScheme(s), controlplanev1.AddToScheme(s)})
}

// Setup registers the TalosConfig and TalosControlPlane controllers and the
// bootstrap provider's webhooks with mgr, whose scheme must hold the kinds
// of AddToScheme and CAPI's core kinds, and whose webhook server serves the
// configurations of WebhookDirectory (envtest.Management.ServeWebhooks).
// Secrets are read from mgr's API reader, so the manager caches none.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	etcd := o.Etcd
	if etcd == nil {
		etcd = &taloscontrolplane.TalosEtcd{Reader: mgr.GetAPIReader(), Port: o.TalosAPIPort}
	}

	return kerrors.NewAggregate([]error{
		webhooks.Setup(mgr),
		(&talosconfig.Reconciler{
			Client:           mgr.GetClient(),
			APIReader:        mgr.GetAPIReader(),
			WatchFilterValue: o.WatchFilterValue,
		}).SetupWithManager(ctx, mgr, o.Controller),
		(&taloscontrolplane.Reconciler{
			Client:           mgr.GetClient(),
			APIReader:        mgr.GetAPIReader(),
			Etcd:             etcd,
			ScaleDown:        o.ScaleDown,
			WatchFilterValue: o.WatchFilterValue,
		}).SetupWithManager(ctx, mgr, o.Controller),
	})
}

// CRDDirectory is the directory of the stand-ins' CRDs, for
// envtest.WithCRDDirectories.
func CRDDirectory() string {
	_, file, _, _ := runtime.Caller(0)

	return filepath.Join(filepath.Dir(file), "config", "crd")
}

// WebhookDirectory is the directory of the stand-ins' webhook
// configurations, for envtest.Management.ServeWebhooks.
func WebhookDirectory() string {
	_, file, _, _ := runtime.Caller(0)

	return filepath.Join(filepath.Dir(file), "config", "webhook")
}
