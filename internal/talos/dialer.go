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
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// TalosConfigSecretSuffix is appended to the Cluster name to name the
	// Secret in which the Talos CAPI bootstrap provider stores the
	// cluster's talosconfig.
	TalosConfigSecretSuffix = "-talosconfig"
	// TalosConfigSecretKey is the data key of the talosconfig in that Secret.
	TalosConfigSecretKey = "talosconfig"

	// DefaultCallTimeout bounds every call but image pulls and upgrades.
	DefaultCallTimeout = 30 * time.Second
	// DefaultInstallTimeout bounds an image pull and an upgrade, which
	// download the installer image.
	DefaultInstallTimeout = 10 * time.Minute
)

// SecretDialer is the production Dialer: it reads the talosconfig of the
// Machine's Cluster from the management cluster and dials the Talos API of
// the Machine's own address, pinning every request to that node.
type SecretDialer struct {
	// Reader reads the talosconfig Secret. Pass an uncached reader
	// (mgr.GetAPIReader()): Secrets are not worth caching cluster-wide.
	Reader client.Reader
	// Port is the Talos API port, DefaultAPIPort when zero.
	Port int
	// Timeout bounds each call, DefaultCallTimeout when zero.
	Timeout time.Duration
	// InstallTimeout bounds image pulls and upgrades, DefaultInstallTimeout
	// when zero.
	InstallTimeout time.Duration
	// ConfigCacheTTL is how long a parsed talosconfig is reused before its
	// Secret is read again; zero reads it on every Dial. A TLS failure drops
	// the cached copy at once, so a rotated talosconfig is picked up.
	ConfigCacheTTL time.Duration
	// GRPCDialOptions are appended to the machinery client's dial options.
	// Production code leaves them empty; tests may tune connection backoff.
	GRPCDialOptions []grpc.DialOption

	cache configCache
}

var _ Dialer = &SecretDialer{}

// cachedConfig is a parsed talosconfig and when its Secret was read.
type cachedConfig struct {
	context *clientconfig.Context
	read    time.Time
}

// configCache holds the parsed talosconfigs of a SecretDialer, by Secret.
type configCache struct {
	mu      sync.Mutex
	entries map[client.ObjectKey]cachedConfig
}

func (c *configCache) get(key client.ObjectKey, ttl time.Duration, now time.Time) (*clientconfig.Context, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.Sub(e.read) >= ttl {
		return nil, false
	}
	return e.context, true
}

func (c *configCache) put(key client.ObjectKey, ctx *clientconfig.Context, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[client.ObjectKey]cachedConfig{}
	}
	c.entries[key] = cachedConfig{context: ctx, read: now}
}

func (c *configCache) forget(key client.ObjectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// DialerOption configures a SecretDialer.
type DialerOption func(*SecretDialer)

// WithPort sets the Talos API port.
func WithPort(port int) DialerOption {
	return func(d *SecretDialer) { d.Port = port }
}

// WithTimeout sets the timeout of each call.
func WithTimeout(timeout time.Duration) DialerOption {
	return func(d *SecretDialer) { d.Timeout = timeout }
}

// WithInstallTimeout sets the timeout of image pulls and upgrades.
func WithInstallTimeout(timeout time.Duration) DialerOption {
	return func(d *SecretDialer) { d.InstallTimeout = timeout }
}

// WithConfigCacheTTL reuses a parsed talosconfig for ttl before reading its
// Secret again.
func WithConfigCacheTTL(ttl time.Duration) DialerOption {
	return func(d *SecretDialer) { d.ConfigCacheTTL = ttl }
}

// WithGRPCDialOptions adds gRPC dial options; use only where strictly
// necessary (tests).
func WithGRPCDialOptions(opts ...grpc.DialOption) DialerOption {
	return func(d *SecretDialer) { d.GRPCDialOptions = append(d.GRPCDialOptions, opts...) }
}

// NewDialer returns a SecretDialer reading Secrets with reader.
func NewDialer(reader client.Reader, opts ...DialerOption) *SecretDialer {
	d := &SecretDialer{Reader: reader}
	for _, opt := range opts {
		opt(d)
	}

	return d
}

// Dial opens a Client to the node of machine. It fails, before the node is
// reached, with ErrNotDialed beside ErrTalosConfigNotFound,
// ErrTalosConfigInvalid, ErrNoAddress or the error of reading the
// talosconfig Secret; connection problems (ErrTLS, ErrUnreachable) surface
// on the first call.
func (d *SecretDialer) Dial(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine) (Client, error) {
	c, err := d.dial(ctx, cluster, machine)
	if err != nil {
		return nil, notDialedError{err}
	}
	return c, nil
}

// notDialedError is an error of Dial: it is ErrNotDialed and its cause, and
// says only what its cause says.
type notDialedError struct{ cause error }

func (e notDialedError) Error() string   { return e.cause.Error() }
func (e notDialedError) Unwrap() []error { return []error{ErrNotDialed, e.cause} }

// dial is Dial without ErrNotDialed.
func (d *SecretDialer) dial(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine) (Client, error) {
	if d.Reader == nil {
		return nil, errors.New("talos dialer has no Secret reader")
	}

	if cluster == nil || machine == nil {
		return nil, errors.New("dialing a Talos node needs a Cluster and a Machine")
	}

	configContext, err := d.talosConfig(ctx, cluster)
	if err != nil {
		return nil, err
	}

	address, err := MachineAddress(machine)
	if err != nil {
		return nil, err
	}

	port := d.Port
	if port == 0 {
		port = DefaultAPIPort
	}

	opts := []talosclient.OptionFunc{
		talosclient.WithConfigContext(configContext),
		talosclient.WithEndpoints(net.JoinHostPort(address, strconv.Itoa(port))),
	}
	if len(d.GRPCDialOptions) > 0 {
		opts = append(opts, talosclient.WithGRPCDialOptions(d.GRPCDialOptions...))
	}

	c, err := talosclient.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the Talos client of Machine %s/%s: %w", machine.Namespace, machine.Name, err)
	}

	return &nodeClient{
		talos:          c,
		node:           address,
		timeout:        orDefault(d.Timeout, DefaultCallTimeout),
		installTimeout: orDefault(d.InstallTimeout, DefaultInstallTimeout),
		onTLSFailure:   func() { d.cache.forget(talosConfigKey(cluster)) },
	}, nil
}

// talosConfig reads and parses the talosconfig of cluster and returns its
// current context. Errors never quote the Secret's content.
func (d *SecretDialer) talosConfig(ctx context.Context, cluster *clusterv1.Cluster) (*clientconfig.Context, error) {
	key := talosConfigKey(cluster)
	now := time.Now()
	if d.ConfigCacheTTL > 0 {
		if cached, ok := d.cache.get(key, d.ConfigCacheTTL, now); ok {
			return cached, nil
		}
	}
	secret := &corev1.Secret{}

	if err := d.Reader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %q of Cluster %s/%s does not exist", ErrTalosConfigNotFound, key, cluster.Namespace, cluster.Name)
		}

		return nil, fmt.Errorf("reading talosconfig Secret %q: %w", key, err)
	}

	raw, ok := secret.Data[TalosConfigSecretKey]
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("%w: Secret %q has no %q key", ErrTalosConfigInvalid, key, TalosConfigSecretKey)
	}

	configContext, err := ParseTalosConfig(raw, key.String())
	if err != nil {
		return nil, err
	}
	if d.ConfigCacheTTL > 0 {
		d.cache.put(key, configContext, now)
	}
	return configContext, nil
}

// talosConfigKey is the key of the talosconfig Secret of cluster.
func talosConfigKey(cluster *clusterv1.Cluster) client.ObjectKey {
	return client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Name + TalosConfigSecretSuffix}
}

// ParseTalosConfig parses a talosconfig and returns its current context
// (or its only one), checked to hold a CA and a client certificate. source
// names where it came from in errors, which never quote the content.
func ParseTalosConfig(raw []byte, source string) (*clientconfig.Context, error) {
	cfg, err := clientconfig.FromBytes(raw)
	if err != nil {
		// The parser's message may quote the content: leave it out.
		return nil, fmt.Errorf("%w: talosconfig in %q is not a valid talosconfig document", ErrTalosConfigInvalid, source)
	}

	ctxName := cfg.Context
	configContext, ok := cfg.Contexts[ctxName]

	if !ok && len(cfg.Contexts) == 1 {
		for name, only := range cfg.Contexts {
			ctxName, configContext, ok = name, only, true
		}
	}

	if !ok || configContext == nil {
		return nil, fmt.Errorf("%w: talosconfig in %q has no context %q", ErrTalosConfigInvalid, source, ctxName)
	}

	if configContext.CA == "" || configContext.Crt == "" || configContext.Key == "" {
		return nil, fmt.Errorf("%w: context %q of the talosconfig in %q lacks its CA, certificate or key", ErrTalosConfigInvalid, ctxName, source)
	}

	if _, err := talosclient.CertificateFromConfigContext(configContext); err != nil {
		return nil, fmt.Errorf("%w: context %q of the talosconfig in %q has an unusable client certificate", ErrTalosConfigInvalid, ctxName, source)
	}

	return configContext, nil
}

// MachineAddress returns the address of machine's node: its first
// InternalIP, else its first ExternalIP.
func MachineAddress(machine *clusterv1.Machine) (string, error) {
	for _, addrType := range []clusterv1.MachineAddressType{clusterv1.MachineInternalIP, clusterv1.MachineExternalIP} {
		for _, addr := range machine.Status.Addresses {
			if addr.Type == addrType && addr.Address != "" {
				return addr.Address, nil
			}
		}
	}

	return "", fmt.Errorf("%w: Machine %s/%s has no InternalIP or ExternalIP in status.addresses", ErrNoAddress, machine.Namespace, machine.Name)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}

	return d
}
