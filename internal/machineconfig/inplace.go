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

package machineconfig

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
)

// ErrNotInPlace is wrapped by every ChangeError: a change of the machine
// configuration that cannot be made on a running node.
var ErrNotInPlace = errors.New("cannot be changed on a running node")

// ChangeError is a change of one field CheckInPlace refuses. Its message
// names the field, why it cannot change in place and what to do instead;
// it never holds the field's values.
type ChangeError struct {
	// Field is the path of the field in the machine configuration, for
	// example "cluster.ca".
	Field string
	// Why says what the field is and what changing it on a running node
	// would break.
	Why string
	// Instead says what to do instead.
	Instead string
}

// Error implements error.
func (e *ChangeError) Error() string {
	return fmt.Sprintf("%s %s: %s; %s", e.Field, ErrNotInPlace, e.Why, e.Instead)
}

// Is makes errors.Is(err, ErrNotInPlace) true.
func (e *ChangeError) Is(target error) bool { return target == ErrNotInPlace }

// rule is a field of the machine configuration that does not change in
// place.
type rule struct {
	// field is the field's path.
	field string
	// value reads the field of a configuration; nil when it is absent.
	value func(c *v1alpha1.Config) any
	// why and instead are the ChangeError's.
	why, instead string
}

// rotateCA is what to do instead of changing a CA in place.
const rotateCA = "rotate it with talosctl rotate-ca, which makes every node accept the new CA (machine.acceptedCAs) before any node uses it, then update the Cluster's secrets bundle"

// bundleSecret is what to do instead of changing what CABPT takes from
// the Cluster's secrets bundle.
const bundleSecret = "CABPT takes it from the Cluster's secrets bundle for every Machine: remove the patch that sets it"

// rules are the fields CheckInPlace refuses to change, each with why.
// Talos itself applies any change of .cluster and of machine.ca without a
// reboot (CanApplyImmediate): these are refused because the change, made
// one node at a time, splits the cluster, not because Talos cannot make
// it. They are the secrets and identities CABPT takes from the Cluster's
// secrets bundle (the same for every Machine), the node's role, and what
// comes from the CAPI Cluster.
var rules = []rule{
	{field: "machine.type",
		value: func(c *v1alpha1.Config) any {
			return machineField(c, func(m *v1alpha1.MachineConfig) any { return m.MachineType })
		},
		why:     "a node's role (worker or control plane) comes from what made its Machine, and Talos does not move etcd and the control-plane components onto or off a running node",
		instead: "make a Machine of the other role (scale its MachineDeployment or control plane up) and delete this one"},
	{field: "machine.ca",
		value: func(c *v1alpha1.Config) any {
			return machineField(c, func(m *v1alpha1.MachineConfig) any { return m.MachineCA })
		},
		why:     "the Talos API's CA, which every client of the node (Tollgate included) and every other node trusts: a node with another CA is cut off from them",
		instead: rotateCA},
	{field: "machine.token",
		value: func(c *v1alpha1.Config) any {
			return machineField(c, func(m *v1alpha1.MachineConfig) any { return m.MachineToken })
		},
		why:     "the token a node asks the control plane's trustd for its certificates with: a node with another token gets none",
		instead: bundleSecret},
	{field: "cluster.id",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterID })
		},
		why:     "the cluster's identity in Talos discovery and KubeSpan: a node with another one leaves the cluster's discovery",
		instead: bundleSecret},
	{field: "cluster.secret",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterSecret })
		},
		why:     "the key the cluster's members encrypt their discovery data with: a node with another one cannot read the others'",
		instead: bundleSecret},
	{field: "cluster.token",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.BootstrapToken })
		},
		why:     "the bootstrap token kubelets join the cluster with",
		instead: bundleSecret},
	{field: "cluster.secretboxEncryptionSecret",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterSecretboxEncryptionSecret })
		},
		why:     "the key Secrets are encrypted with in etcd: an API server with another key cannot read the Secrets the others wrote",
		instead: "rotate encryption keys as Kubernetes documents (add the new key, rewrite every Secret, remove the old one), not by a patch"},
	{field: "cluster.aescbcEncryptionSecret",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterAESCBCEncryptionSecret })
		},
		why:     "the key Secrets are encrypted with in etcd: an API server with another key cannot read the Secrets the others wrote",
		instead: "rotate encryption keys as Kubernetes documents (add the new key, rewrite every Secret, remove the old one), not by a patch"},
	{field: "cluster.ca",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterCA })
		},
		why:     "the Kubernetes CA, which every kubelet, API server and client trusts: a node with another CA is cut off from the cluster",
		instead: rotateCA + " (--kubernetes)"},
	{field: "cluster.aggregatorCA",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterAggregatorCA })
		},
		why:     "the front-proxy CA of the Kubernetes API aggregation layer: an API server with another one cannot reach the aggregated APIs",
		instead: bundleSecret},
	{field: "cluster.serviceAccount",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any { return k.ClusterServiceAccount })
		},
		why:     "the key service account tokens are signed with: an API server with another key refuses the tokens the others signed",
		instead: bundleSecret},
	{field: "cluster.etcd.ca",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any {
				if k.EtcdConfig == nil {
					return nil
				}
				return k.EtcdConfig.RootCA
			})
		},
		why:     "the CA etcd members trust each other with: a member with another CA is cut off from the others",
		instead: bundleSecret},
	{field: "cluster.controlPlane.endpoint",
		value: func(c *v1alpha1.Config) any {
			return clusterField(c, func(k *v1alpha1.ClusterConfig) any {
				if k.ControlPlane == nil || k.ControlPlane.Endpoint == nil || k.ControlPlane.Endpoint.URL == nil {
					return nil
				}
				return k.ControlPlane.Endpoint.String()
			})
		},
		why:     "CABPT takes it from the CAPI Cluster's spec.controlPlaneEndpoint, and every kubelet and the API server's certificate name it: one node with another endpoint leaves the cluster",
		instead: "the control-plane endpoint is the Cluster's: change spec.controlPlaneEndpoint there (CAPI allows it only before the Cluster is provisioned) rather than by a patch"},
	{field: "cluster.network.podSubnets",
		value: func(c *v1alpha1.Config) any {
			return networkField(c, func(n *v1alpha1.ClusterNetworkConfig) any { return n.PodSubnet })
		},
		why:     "the cluster's pod network, from which every node was given its pod CIDR when it registered and the CNI routes: nodes changed one at a time would run two networks",
		instead: "the cluster's networks are chosen when it is created: make a new Cluster"},
	{field: "cluster.network.serviceSubnets",
		value: func(c *v1alpha1.Config) any {
			return networkField(c, func(n *v1alpha1.ClusterNetworkConfig) any { return n.ServiceSubnet })
		},
		why:     "the cluster's Service network, from which every Service has its IP: API servers changed one at a time would hand out IPs from two networks",
		instead: "the cluster's networks are chosen when it is created: make a new Cluster"},
	{field: "cluster.network.dnsDomain",
		value: func(c *v1alpha1.Config) any {
			return networkField(c, func(n *v1alpha1.ClusterNetworkConfig) any { return n.DNSDomain })
		},
		why:     "the cluster's DNS domain, which every pod's resolver and every Service's name carry: nodes changed one at a time would resolve two domains",
		instead: "the cluster's DNS domain is chosen when it is created: make a new Cluster"},
}

// CheckInPlace returns nil when a node running running can be changed to
// run desired on the node itself (with or without a reboot), and otherwise
// why not:
//
//   - desired does not load as Talos machine configuration, has no v1alpha1
//     document (Talos refuses those on a running node), or does not pass
//     Talos' validation of a running node (Validate in the mode of an
//     installed node): the loader's or validation's error, wrapping
//     ErrInvalidConfig, its values scrubbed;
//   - it changes a field of rules: a *ChangeError for each such field,
//     joined, each wrapping ErrNotInPlace.
//
// running must load too (ErrInvalidConfig). Neither configuration's values
// appear in an error.
func CheckInPlace(running, desired []byte) error {
	cur, err := configloader.NewFromBytes(running)
	if err != nil {
		return fmt.Errorf("%w: the running configuration does not load: %s", ErrInvalidConfig, scrub(err, running))
	}
	next, err := configloader.NewFromBytes(desired)
	if err != nil {
		return fmt.Errorf("%w: the desired configuration does not load: %s", ErrInvalidConfig, scrub(err, desired, running))
	}
	if cur.RawV1Alpha1() == nil {
		return fmt.Errorf("%w: the running configuration has no v1alpha1 document", ErrInvalidConfig)
	}
	if next.RawV1Alpha1() == nil {
		return fmt.Errorf("%w: the desired configuration has no v1alpha1 document, which a running node refuses", ErrInvalidConfig)
	}
	var errs []error
	if _, err := next.Validate(installedNode{}); err != nil {
		errs = append(errs, fmt.Errorf("%w: the desired configuration does not validate: %s", ErrInvalidConfig, scrub(err, desired, running)))
	}
	return errors.Join(append(errs, changes(cur, next)...)...)
}

// changes returns a ChangeError for each field of rules next changes from
// cur.
func changes(cur, next config.Provider) []error {
	var errs []error
	for _, r := range rules {
		if !same(r.value(cur.RawV1Alpha1()), r.value(next.RawV1Alpha1())) {
			errs = append(errs, &ChangeError{Field: r.field, Why: r.why, Instead: r.instead})
		}
	}
	return errs
}

// same reports whether two values of a field are the same: equal, or both
// absent or empty (a nil pointer, an empty string or list).
func same(a, b any) bool {
	return reflect.DeepEqual(a, b) || (empty(a) && empty(b))
}

// empty reports whether v is absent or empty.
func empty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	//nolint:exhaustive // other kinds are empty only when zero.
	switch rv.Kind() {
	case reflect.Slice, reflect.Map:
		return rv.Len() == 0
	default:
		return rv.IsZero()
	}
}

// machineField returns get of c's machine section, nil when it has none.
func machineField(c *v1alpha1.Config, get func(*v1alpha1.MachineConfig) any) any {
	if c.MachineConfig == nil {
		return nil
	}
	return get(c.MachineConfig)
}

// clusterField returns get of c's cluster section, nil when it has none.
func clusterField(c *v1alpha1.Config, get func(*v1alpha1.ClusterConfig) any) any {
	if c.ClusterConfig == nil {
		return nil
	}
	return get(c.ClusterConfig)
}

// networkField returns get of c's cluster.network, nil when it has none.
func networkField(c *v1alpha1.Config, get func(*v1alpha1.ClusterNetworkConfig) any) any {
	return clusterField(c, func(k *v1alpha1.ClusterConfig) any {
		if k.ClusterNetwork == nil {
			return nil
		}
		return get(k.ClusterNetwork)
	})
}

// installedNode is the validation mode of a running node as machined
// validates an applied configuration: an installed node needs no install
// section. Whether it runs in a container is not known here; the node
// checks that itself when the configuration is applied.
type installedNode struct{}

// String implements validation.RuntimeMode.
func (installedNode) String() string { return "metal" }

// RequiresInstall implements validation.RuntimeMode.
func (installedNode) RequiresInstall() bool { return false }

// InContainer implements validation.RuntimeMode.
func (installedNode) InContainer() bool { return false }
