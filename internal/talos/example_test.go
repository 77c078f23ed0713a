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

package talos_test

import (
	"errors"
	"fmt"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

func ExampleInstallerImage() {
	spec := upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"}

	// A node without a "schematic" extension gets the default schematic.
	image, err := talos.InstallerImage(spec, "1.13.0", "")
	if err != nil {
		panic(err)
	}

	fmt.Println(image)

	image, _ = talos.InstallerImage(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR}, "v1.13.0", "")
	fmt.Println(image)
	// Output:
	// factory.talos.dev/metal-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.13.0
	// ghcr.io/siderolabs/installer:v1.13.0
}

func ExampleCheckUpgradeStep() {
	fmt.Println(talos.CheckUpgradeStep("v1.12.4", "v1.13.0", false))

	err := talos.CheckUpgradeStep("v1.10.3", "v1.13.0", false)
	fmt.Println(errors.Is(err, talos.ErrUnsupportedUpgradePath), talos.SuggestIntermediate("v1.10.3", "v1.13.0"))

	err = talos.CheckUpgradeStep("v1.13.0", "v1.12.4", false)
	fmt.Println(errors.Is(err, talos.ErrDowngradeNotAllowed))
	// Output:
	// <nil>
	// true v1.12
	// true
}
