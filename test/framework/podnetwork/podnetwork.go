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

// Package podnetwork gives an envtest kube-apiserver a pod network, so that
// its Service proxy (/api/v1/namespaces/<ns>/services/<name>:<port>/proxy/)
// reaches servers of the test process, as a real apiserver reaches Pods.
//
// The apiserver cannot be pointed at the test process directly: its Service
// proxy only proxies to endpoints that are Pods (an EndpointSlice endpoint
// whose targetRef is a Pod whose status.podIPs hold its address), and an
// EndpointSlice refuses loopback addresses ("may not be in the loopback
// range"), while a test may only serve on loopback. So the apiserver is
// started with an egress selector (--egress-selector-config-file) that sends
// its traffic to the cluster network (the "cluster" egress: Service, Pod and
// node proxies) through an HTTP CONNECT tunnel on a Unix socket, as it does
// through Konnectivity in many real clusters. The tunnel is the Network:
// each exposed server gets a Pod IP of TEST-NET-2 (198.51.100.0/24, never
// dialled: the tunnel maps it to the server's loopback address), a Pod
// holding it, a selector-less Service and an EndpointSlice.
package podnetwork

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// podSubnet is the prefix of the Pod IPs the Network hands out: TEST-NET-2,
// a range reserved for documentation, which the tunnel never dials.
const podSubnet = "198.51.100."

// Network is a pod network of one or more apiservers: an HTTP CONNECT
// tunnel from their egress to loopback servers.
type Network struct {
	dir      string
	listener net.Listener
	// ConfigFile is the apiserver's EgressSelectorConfiguration.
	ConfigFile string

	mu     sync.Mutex
	routes map[string]string // Pod IP:port -> loopback address.
	next   int
	// dialled counts the connections the apiserver opened per Pod IP:port.
	dialled map[string]int
	// conns are the open tunnels, closed by Close.
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// New starts the tunnel and writes the egress selector configuration.
func New() (*Network, error) {
	// A short directory: a Unix socket path has at most 107 bytes.
	dir, err := os.MkdirTemp("", "podnet")
	if err != nil {
		return nil, err
	}
	n := &Network{dir: dir, routes: map[string]string{}, dialled: map[string]int{}, conns: map[net.Conn]bool{}, next: 10}
	sock := filepath.Join(dir, "tunnel.sock")
	if n.listener, err = net.Listen("unix", sock); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("listening on the tunnel's socket: %w", err)
	}
	n.ConfigFile = filepath.Join(dir, "egress.yaml")
	config := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, sock)
	if err := os.WriteFile(n.ConfigFile, []byte(config), 0o600); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("writing the egress selector configuration: %w", err)
	}
	n.wg.Go(n.serve)
	return n, nil
}

// Configure makes the apiserver of env send its cluster egress through the
// Network; call it before env.Start.
func (n *Network) Configure(env *crenvtest.Environment) {
	env.ControlPlane.GetAPIServer().Configure().Set("egress-selector-config-file", n.ConfigFile)
}

// Close stops the tunnel and closes its connections.
func (n *Network) Close() error {
	err := n.listener.Close()
	n.mu.Lock()
	for c := range n.conns {
		_ = c.Close()
	}
	n.mu.Unlock()
	n.wg.Wait()
	return errors.Join(err, os.RemoveAll(n.dir))
}

// Dialled returns how many connections the apiserver opened to the Pod IP
// and port podAddr.
func (n *Network) Dialled(podAddr string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dialled[podAddr]
}

// Expose makes the loopback server at local the endpoint of a Service
// namespace/name with one port named portName, numbered port (the Pod's
// port too): it creates a Pod holding a new Pod IP, the Service without a
// selector and its EndpointSlice. It returns the Pod IP and port, as the
// apiserver dials them.
func (n *Network) Expose(ctx context.Context, c client.Client, namespace, name, portName string, port int32, local string) (string, error) {
	n.mu.Lock()
	if n.next > 254 {
		n.mu.Unlock()
		return "", errors.New("the pod network has no address left")
	}
	ip := podSubnet + strconv.Itoa(n.next)
	n.next++
	podAddr := net.JoinHostPort(ip, strconv.Itoa(int(port)))
	n.routes[podAddr] = local
	n.mu.Unlock()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating Namespace %s: %w", namespace, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "tollgate.invalid/test-server"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		return "", fmt.Errorf("creating Pod %s/%s: %w", namespace, name, err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if err := c.Status().Update(ctx, pod); err != nil {
		return "", fmt.Errorf("giving Pod %s/%s its IP: %w", namespace, name, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: port, TargetPort: intstr.FromInt32(port)}}},
	}
	if err := c.Create(ctx, svc); err != nil {
		return "", fmt.Errorf("creating Service %s/%s: %w", namespace, name, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name + "-tunnel", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: name, UID: pod.UID},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := c.Create(ctx, slice); err != nil {
		return "", fmt.Errorf("creating EndpointSlice %s/%s: %w", namespace, slice.Name, err)
	}
	return podAddr, nil
}

// serve accepts the apiserver's tunnels until the listener closes.
func (n *Network) serve() {
	for {
		conn, err := n.listener.Accept()
		if err != nil {
			return
		}
		n.wg.Go(func() { n.tunnel(conn) })
	}
}

// tunnel answers one CONNECT: to a known Pod IP and port, it connects the
// apiserver to the server's loopback address; to any other, it refuses.
func (n *Network) tunnel(conn net.Conn) {
	n.mu.Lock()
	n.conns[conn] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.conns, conn)
		n.mu.Unlock()
		_ = conn.Close()
	}()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	n.mu.Lock()
	local, ok := n.routes[req.Host]
	if ok {
		n.dialled[req.Host]++
	}
	n.mu.Unlock()
	if req.Method != http.MethodConnect || !ok {
		_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", local)
	if err != nil {
		_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer func() { _ = up.Close() }()
	n.mu.Lock()
	n.conns[up] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.conns, up)
		n.mu.Unlock()
	}()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, br)
		if c, ok := up.(*net.TCPConn); ok {
			_ = c.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(conn, up)
	_ = conn.Close()
	<-done
}

// StartWorkload starts a bare control plane whose Service proxy reaches
// the Network: a workload cluster, with an admin kubeconfig as CAPI stores
// it (see envtest.Management.StoreKubeconfig).
func (n *Network) StartWorkload() (*envtest.Workload, error) {
	env := &crenvtest.Environment{Scheme: envtest.NewScheme()}
	envtest.Configure(env)
	n.Configure(env)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting a workload control plane on the pod network: %w", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	w := &envtest.Workload{ControlPlane: envtest.ControlPlane{Env: env, Config: cfg}}
	if w.Client, err = client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		return nil, errors.Join(fmt.Errorf("creating a client of the workload control plane: %w", err), env.Stop())
	}
	user, err := w.AddAdmin("tollgate-admin")
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	if w.Kubeconfig, err = user.KubeConfig(); err != nil {
		return nil, errors.Join(fmt.Errorf("writing the workload kubeconfig: %w", err), env.Stop())
	}
	return w, nil
}
