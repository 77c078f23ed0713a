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

package talosnode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestWith checks the one way the controller talks to a node: a client
// that was dialled is closed whatever its calls answered, an error of
// dialing is returned and no call is made, a call's error is returned as it
// is, and an error of closing is logged, not returned.
func TestWith(t *testing.T) {
	errDial := errors.New("no talosconfig")
	errCall := errors.New("the node refused")
	errClose := errors.New("connection reset")
	for _, tt := range []struct {
		name      string
		dialErr   error
		callErr   error
		closeErr  error
		wantErr   error
		wantCall  bool
		wantClose bool
		wantLog   string
	}{
		{name: "a call that succeeds", wantCall: true, wantClose: true},
		{name: "a call that fails", callErr: errCall, wantErr: errCall, wantCall: true, wantClose: true},
		{name: "a node that is not dialed", dialErr: errDial, wantErr: errDial},
		{name: "a client that does not close", closeErr: errClose, wantCall: true, wantClose: true, wantLog: "connection reset"},
		{name: "a call that fails, and a client that does not close", callErr: errCall, closeErr: errClose, wantErr: errCall, wantCall: true, wantClose: true, wantLog: "connection reset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var logged []string
			log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 4})
			ctx := ctrl.LoggerInto(context.Background(), log)
			tc := &closeRecorder{err: tt.closeErr}
			n := Nodes{Dialer: dialerFunc(func(context.Context, *clusterv1.Cluster, *clusterv1.Machine) (talos.Client, error) {
				if tt.dialErr != nil {
					return nil, tt.dialErr
				}
				return tc, nil
			})}
			called := false
			err := n.With(ctx, &clusterv1.Cluster{}, &clusterv1.Machine{}, func(got talos.Client) error {
				called = true
				g.Expect(got).To(BeIdenticalTo(tc))
				g.Expect(tc.closed).To(BeFalse(), "the client is open while the calls are made")
				return tt.callErr
			})
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(called).To(Equal(tt.wantCall))
			g.Expect(tc.closed).To(Equal(tt.wantClose))
			if tt.wantLog == "" {
				g.Expect(logged).To(BeEmpty())
				return
			}
			g.Expect(logged).To(ContainElement(ContainSubstring(tt.wantLog)))
			g.Expect(strings.Join(logged, "\n")).To(ContainSubstring(`"level"=4`), "logged at verbosity 4")
		})
	}
}

// dialerFunc is a talos.Dialer of a function.
type dialerFunc func(context.Context, *clusterv1.Cluster, *clusterv1.Machine) (talos.Client, error)

func (f dialerFunc) Dial(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine) (talos.Client, error) {
	return f(ctx, cluster, m)
}

// closeRecorder is a talos.Client that records its Close; any other call
// panics (the embedded nil interface), for With makes none itself.
type closeRecorder struct {
	talos.Client
	err    error
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return c.err
}

// TestReboot asks a simulated node to reboot over the real Talos API, as
// the controller does: a reboot asked for on a boot ID the node no longer
// runs is not made (the soak's double reboot: a call answered late, the
// reboot asked for again on a read made before the node came back), one
// asked for on the boot it runs, or with no boot ID, is; a boot ID that
// cannot be read leaves the call to be made.
func TestReboot(t *testing.T) {
	for _, tt := range []struct {
		name       string
		staleBoot  bool   // ask on the boot ID the node ran before its last reboot
		noBootID   bool   // ask with no boot ID
		readFault  string // an RPC of the boot ID read that fails
		wantReboot bool
	}{
		{name: "on the boot the node runs", wantReboot: true},
		{name: "with no boot ID", noBootID: true, wantReboot: true},
		{name: "on a boot the node no longer runs", staleBoot: true},
		{name: "on a boot ID that cannot be read again", readFault: talossim.RPCRead, wantReboot: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			sim, err := talossim.New(talossim.Options{RebootDuration: 100 * time.Millisecond, Logf: t.Logf})
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() { _ = sim.Close() })
			node, err := sim.AddNode(talossim.NodeConfig{Name: "w-0", Version: "v1.13.0"})
			g.Expect(err).NotTo(HaveOccurred())
			talosconfig, err := sim.TalosConfig("prod")
			g.Expect(err).NotTo(HaveOccurred())
			reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "prod-talosconfig"},
				Data:       map[string][]byte{"talosconfig": talosconfig},
			}).Build()
			n := Nodes{Dialer: talos.NewDialer(reader, talos.WithTimeout(5*time.Second))}
			cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "prod"}}
			m := &clusterv1.Machine{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: node.Name()},
				Status:     clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: node.Address()}}},
			}

			bootID := node.BootID()
			if tt.staleBoot {
				n.Reboot(ctx, cluster, m, upgradev1.RebootModeDefault, bootID)
				g.Eventually(node.BootID, 30*time.Second).ShouldNot(Equal(bootID), "the first ask reboots the node")
				g.Eventually(node.Up, 30*time.Second).Should(BeTrue())
			}
			asked, before := bootID, node.BootID()
			if tt.noBootID {
				asked = ""
			}
			if tt.readFault != "" {
				node.InjectFault(talossim.Faults{DropRPCs: []string{tt.readFault}})
			}
			calls := sim.Calls(node.Name(), talossim.RPCReboot)
			n.Reboot(ctx, cluster, m, upgradev1.RebootModeDefault, asked)
			node.InjectFault(talossim.Faults{})
			if !tt.wantReboot {
				g.Expect(sim.Calls(node.Name(), talossim.RPCReboot)).To(Equal(calls), "no reboot asked of the node")
				g.Consistently(node.BootID, time.Second).Should(Equal(before), "the node is not rebooted again")
				return
			}
			g.Expect(sim.Calls(node.Name(), talossim.RPCReboot)).To(Equal(calls + 1))
			g.Eventually(node.BootID, 30*time.Second).ShouldNot(Equal(before), "the node reboots")
		})
	}
}
