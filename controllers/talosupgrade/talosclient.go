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

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "how does the controller talk to a node": every call to
// a node's Talos API (reads, the upgrade call, configuration, reboot, etcd
// health) goes through withTalos, which dials the node, runs the calls and
// closes the client, so that no client is left open and no error of
// closing one is dropped unseen.

// withTalos dials the Talos API of Machine m's node in cluster (r.Dialer),
// runs call with the client, and closes it. It returns the error of
// dialing (talos.ErrNotDialed beside its cause, and call is not run) or
// call's error, as they are. An error of closing the client is logged at
// verbosity 4 and not returned: what the calls answered was read before,
// and the connection is gone either way.
func (r *Reconciler) withTalos(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, call func(tc talos.Client) error) error {
	tc, err := r.Dialer.Dial(ctx, cluster, m)
	if err != nil {
		return err
	}
	defer func() {
		if err := tc.Close(); err != nil {
			ctrl.LoggerFrom(ctx).V(4).Info("Closing the Talos API client of a node failed", "Machine", klog.KObj(m), "err", err.Error())
		}
	}()
	return call(tc)
}

// versionAndBoot reads the Talos version a node runs and its boot ID: what
// tells whether it rebooted, and into what.
func versionAndBoot(ctx context.Context, tc talos.Client) (version, bootID string, err error) {
	if version, err = tc.Version(ctx); err != nil {
		return "", "", err
	}
	if bootID, err = tc.BootID(ctx); err != nil {
		return version, "", err
	}
	return version, bootID, nil
}
