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

package talossim_test

import (
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

func Example() {
	sim, err := talossim.New(talossim.Options{RebootDuration: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer sim.Close() //nolint:errcheck // the example ends here.

	cp, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.12.4", ControlPlane: true})
	if err != nil {
		panic(err)
	}

	// The talosconfig goes into the <cluster>-talosconfig Secret, and
	// cp.Address() into the Machine's status.addresses as InternalIP.
	talosconfig, err := sim.TalosConfig("prod")
	if err != nil {
		panic(err)
	}

	cp.InjectFault(talossim.Faults{Rollback: true})

	fmt.Println(cp.Name(), cp.Version(), len(talosconfig) > 0, sim.Calls("cp-1", talossim.RPCLegacyUpgrade))
	// Output: cp-1 v1.12.4 true 0
}
