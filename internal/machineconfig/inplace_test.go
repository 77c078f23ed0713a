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
	"encoding/base64"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// otherPEM is a base64 value of the shape of a certificate or key that no
// fixture has.
var otherPEM = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIBother\n-----END CERTIFICATE-----\n"))

// TestCheckInPlace refuses each change a running node cannot take, naming
// the field, and lets every other change through.
func TestCheckInPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running []byte
		// patch makes the desired configuration from running.
		patch string
		// desired, when set, is the desired configuration instead.
		desired []byte
		// wantFields are the fields refused, in rules' order.
		wantFields []string
		// wantInvalid is whether the desired configuration is refused as
		// invalid.
		wantInvalid bool
	}{
		{name: "a sysctl, kubelet and label change", running: worker(t),
			patch: sysctlPatch + "  kubelet:\n    extraArgs:\n      max-pods: \"250\"\n  nodeLabels:\n    tier: gold\n"},
		{name: "a file and an acceptedCAs entry (rotation's first step)", running: controlPlane(t),
			patch: "machine:\n  acceptedCAs:\n    - crt: " + otherPEM + "\n  files:\n    - path: /var/etc/x\n      content: y\n      op: create\n      permissions: 0o644\n"},
		{name: "nothing", running: controlPlane(t), patch: "machine:\n  sysctls: {}\n"},
		// Talos' validation refuses these too: a worker has no CA keys, a
		// control-plane node has etcd's.
		{name: "worker to control plane", running: worker(t), patch: "machine:\n  type: controlplane\n", wantFields: []string{"machine.type"}, wantInvalid: true},
		{name: "control plane to worker", running: controlPlane(t), patch: "machine:\n  type: worker\n", wantFields: []string{"machine.type"}, wantInvalid: true},
		{name: "the machine CA", running: worker(t), patch: "machine:\n  ca:\n    crt: " + otherPEM + "\n", wantFields: []string{"machine.ca"}},
		{name: "the machine token", running: worker(t), patch: "machine:\n  token: abcdef.0123456789abcdef\n", wantFields: []string{"machine.token"}},
		{name: "the cluster ID and secret", running: worker(t),
			patch:      "cluster:\n  id: " + otherPEM + "\n  secret: " + otherPEM + "\n",
			wantFields: []string{"cluster.id", "cluster.secret"}},
		{name: "the bootstrap token", running: worker(t), patch: "cluster:\n  token: abcdef.0123456789abcdef\n", wantFields: []string{"cluster.token"}},
		{name: "the encryption secrets", running: controlPlane(t),
			patch:      "cluster:\n  secretboxEncryptionSecret: " + otherPEM + "\n  aescbcEncryptionSecret: " + otherPEM + "\n",
			wantFields: []string{"cluster.secretboxEncryptionSecret", "cluster.aescbcEncryptionSecret"}},
		{name: "the Kubernetes CAs and service account key", running: controlPlane(t),
			patch:      "cluster:\n  ca:\n    crt: " + otherPEM + "\n  aggregatorCA:\n    crt: " + otherPEM + "\n  serviceAccount:\n    key: " + otherPEM + "\n",
			wantFields: []string{"cluster.ca", "cluster.aggregatorCA", "cluster.serviceAccount"}},
		{name: "the etcd CA", running: controlPlane(t), patch: "cluster:\n  etcd:\n    ca:\n      crt: " + otherPEM + "\n", wantFields: []string{"cluster.etcd.ca"}},
		{name: "the control-plane endpoint", running: worker(t),
			patch: "cluster:\n  controlPlane:\n    endpoint: https://10.0.0.2:6443\n", wantFields: []string{"cluster.controlPlane.endpoint"}},
		{name: "the cluster's networks and DNS domain", running: worker(t),
			patch:      "cluster:\n  network:\n    podSubnets: [10.100.0.0/16]\n    serviceSubnets: [10.200.0.0/16]\n    dnsDomain: example.internal\n",
			wantFields: []string{"cluster.network.podSubnets", "cluster.network.serviceSubnets", "cluster.network.dnsDomain"}},
		{name: "a desired configuration that does not load", running: worker(t), desired: []byte("machine: [\n"), wantInvalid: true},
		{name: "a desired configuration without v1alpha1", running: worker(t),
			desired: []byte("apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n"), wantInvalid: true},
		{name: "a desired configuration Talos does not validate", running: worker(t),
			patch: "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        addresses: [not-an-address]\n", wantInvalid: true},
		{name: "invalid and a refused change", running: worker(t),
			patch:       "machine:\n  token: abcdef.0123456789abcdef\n  network:\n    interfaces:\n      - interface: eth0\n        addresses: [not-an-address]\n",
			wantInvalid: true, wantFields: []string{"machine.token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			desired := tc.desired
			if desired == nil {
				desired = withStrategic(t, tc.running, tc.patch)
			}
			err := CheckInPlace(tc.running, desired)
			if len(tc.wantFields) == 0 && !tc.wantInvalid {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, ErrInvalidConfig)).To(Equal(tc.wantInvalid), "%v", err)
			g.Expect(errors.Is(err, ErrNotInPlace)).To(Equal(len(tc.wantFields) > 0), "%v", err)
			var fields []string
			for _, ce := range changeErrors(err) {
				fields = append(fields, ce.Field)
				g.Expect(ce.Why).NotTo(BeEmpty())
				g.Expect(ce.Instead).NotTo(BeEmpty())
				g.Expect(err.Error()).To(ContainSubstring(ce.Field + " cannot be changed on a running node: " + ce.Why + "; " + ce.Instead))
			}
			g.Expect(fields).To(Equal(tc.wantFields))
		})
	}
}

// TestCheckInPlaceRunningThatDoesNotLoad checks that a running
// configuration that does not load is an ErrInvalidConfig.
func TestCheckInPlaceRunningThatDoesNotLoad(t *testing.T) {
	g := NewWithT(t)
	err := CheckInPlace([]byte("machine: [\n"), worker(t))
	g.Expect(err).To(MatchError(ErrInvalidConfig))
	g.Expect(err.Error()).To(ContainSubstring("the running configuration does not load"))
}

// TestRulesAreDocumented checks that every rule says why and what to do.
func TestRulesAreDocumented(t *testing.T) {
	g := NewWithT(t)
	seen := map[string]bool{}
	for _, r := range rules {
		g.Expect(seen[r.field]).To(BeFalse(), "%s twice", r.field)
		seen[r.field] = true
		g.Expect(r.why).NotTo(BeEmpty(), r.field)
		g.Expect(r.instead).NotTo(BeEmpty(), r.field)
		g.Expect(r.value).NotTo(BeNil(), r.field)
	}
}

// changeErrors returns the ChangeErrors joined in err.
func changeErrors(err error) []*ChangeError {
	var out []*ChangeError
	var ce *ChangeError
	if errors.As(err, &ce) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				out = append(out, changeErrors(e)...)
			}
			return out
		}
		return []*ChangeError{ce}
	}
	return nil
}
