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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/inventory"
)

// versionsOf returns the Reader of the versions of Clusters: versions
// when set, else a Lister through c.
func versionsOf(versions inventory.Reader, c client.Reader) inventory.Reader {
	if versions != nil {
		return versions
	}
	return inventory.Lister{Reader: c}
}

// upgradesOf returns the TalosUpgrades in namespace whose indexed field
// (one of the TalosUpgrade fields of package index) is value and for which
// match is true.
func upgradesOf(ctx context.Context, c client.Reader, namespace, field, value string, match func(*upgradev1.TalosUpgrade) bool) ([]upgradev1.TalosUpgrade, error) {
	list := &upgradev1.TalosUpgradeList{}
	// The cache's own objects, not copies (a policy of 1,000 Clusters has
	// 1,000 rollouts): they are only read.
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing TalosUpgrades: %w", err)
	}
	var out []upgradev1.TalosUpgrade
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}

// missingHealthChecks returns the names of the referenced ClusterHealthChecks
// that do not exist in namespace.
func missingHealthChecks(ctx context.Context, c client.Reader, namespace string, refs []upgradev1.HealthCheckRef) ([]string, error) {
	var missing []string
	for _, ref := range refs {
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &upgradev1.ClusterHealthCheck{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref.Name)
		case err != nil:
			return nil, fmt.Errorf("getting ClusterHealthCheck %q: %w", ref.Name, err)
		}
	}
	return missing, nil
}
