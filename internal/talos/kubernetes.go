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
	"errors"
	"fmt"
)

// ErrUnsupportedKubernetesStep is returned for a Kubernetes version change
// that is not one step: more than one minor up, a minor down, or another
// major version.
var ErrUnsupportedKubernetesStep = errors.New("unsupported Kubernetes step")

// CheckKubernetesStep returns nil when a Cluster running Kubernetes from may
// move to to in one step: the same version, another patch of the same minor
// (an older one only when allowDowngrade is set), or any patch of the next
// minor. Kubernetes skips no minor and never goes back one, so
// allowDowngrade does not allow a minor downgrade. Otherwise it returns an
// error wrapping ErrInvalidVersion, ErrDowngradeNotAllowed or
// ErrUnsupportedKubernetesStep that names the minor to go through.
func CheckKubernetesStep(from, to string, allowDowngrade bool) error {
	vFrom, err := ParseVersion(from)
	if err != nil {
		return err
	}

	vTo, err := ParseVersion(to)
	if err != nil {
		return err
	}

	if vTo.LessThan(vFrom) && !allowDowngrade {
		return fmt.Errorf("%w: Kubernetes %s is older than the running %s; keep %s or choose a newer version", ErrDowngradeNotAllowed, to, from, from)
	}

	switch {
	case vTo.Major() != vFrom.Major():
		return fmt.Errorf("%w from Kubernetes %s to %s: it changes the major version; choose a %d.x version", ErrUnsupportedKubernetesStep, from, to, vFrom.Major())
	case vTo.Minor() == vFrom.Minor():
		return nil
	case vTo.Minor() < vFrom.Minor():
		return fmt.Errorf("%w from Kubernetes %s to %s: Kubernetes does not support going back a minor; choose a %d.%d patch", ErrUnsupportedKubernetesStep, from, to, vFrom.Major(), vFrom.Minor())
	case vTo.Minor() == vFrom.Minor()+1:
		return nil
	default:
		return fmt.Errorf("%w from Kubernetes %s to %s: Kubernetes moves one minor at a time; upgrade to %d.%d first", ErrUnsupportedKubernetesStep, from, to, vFrom.Major(), vFrom.Minor()+1)
	}
}
