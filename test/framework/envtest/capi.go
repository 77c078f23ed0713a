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

package envtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CAPIFeatureGates are the feature gates CAPI core runs with in every test
// world. RuntimeSDK and InPlaceUpdates are what Tollgate's in-place update
// extension plugs into (CAPI calls CanUpdateMachineSet and UpdateMachine only
// with both on); the other gates keep CAPI's defaults, as a user's
// `clusterctl init` would.
const CAPIFeatureGates = "RuntimeSDK=true,InPlaceUpdates=true"

// capiWebhookPrefix names CAPI's webhook configurations apart from
// Tollgate's: both projects' kubebuilder manifests are named
// mutating-webhook-configuration and validating-webhook-configuration.
const capiWebhookPrefix = "capi-"

// CAPIOptions configure StartCAPI.
type CAPIOptions struct {
	// FeatureGates for --feature-gates; CAPIFeatureGates when empty.
	FeatureGates string

	// Args are more flags of the CAPI core manager, for example
	// --machine-concurrency=10.
	Args []string
}

// CAPI is the Cluster API core manager running as its own process against
// a management control plane, with its webhooks served to that apiserver.
// Stop it before the control plane.
type CAPI struct {
	*process

	webhooks crenvtest.WebhookInstallOptions
}

// CAPIManagerPath returns the path of the CAPI core manager built by
// hack/envtest-assets.sh for the version of sigs.k8s.io/cluster-api in
// go.mod, and an error saying how to build it when it is missing.
func CAPIManagerPath() (string, error) {
	_, version, err := capiModuleInfo()
	if err != nil {
		return "", err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return "", ErrNoAssets
	}
	binary := filepath.Join(assets, "capi-manager-"+version)
	if _, err := os.Stat(binary); err != nil {
		return "", fmt.Errorf("the Cluster API core manager %s is not in KUBEBUILDER_ASSETS (%s): run `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh), which builds it from the module source of sigs.k8s.io/cluster-api/core@%s", version, assets, version)
	}
	return binary, nil
}

// StartCAPI starts CAPI core (the Cluster, Machine, MachineSet,
// MachineDeployment, MachineHealthCheck and the other core controllers, and
// CAPI's webhooks) against m, as an administrator of m, without leader
// election or metrics, and waits until its webhooks serve. CAPI's CRDs are
// the ones StartManagement installed, from the same module version.
func (m *Management) StartCAPI(o CAPIOptions) (*CAPI, error) {
	binary, err := CAPIManagerPath()
	if err != nil {
		return nil, err
	}
	if o.FeatureGates == "" {
		o.FeatureGates = CAPIFeatureGates
	}
	p, err := newProcess(&m.ControlPlane, "capi-manager")
	if err != nil {
		return nil, err
	}
	c := &CAPI{process: p}
	if err := c.installWebhooks(m); err != nil {
		_ = c.Stop()
		return nil, err
	}
	healthPort, err := FreePort()
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	health := net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))
	args := append([]string{
		"--kubeconfig=" + p.kubeconfig(),
		"--feature-gates=" + o.FeatureGates,
		"--leader-elect=false",
		"--health-addr=" + health,
		"--diagnostics-address=0",
		"--webhook-port=" + strconv.Itoa(c.webhooks.LocalServingPort),
		"--webhook-cert-dir=" + c.webhooks.LocalServingCertDir,
		// envtest installs the CRDs at their storage version and with no
		// object yet: there is nothing to migrate.
		"--skip-crd-migration-phases=StorageVersionMigration,CleanupManagedFields",
		// Tests run many Machines at once; the defaults would make them
		// measure CAPI's client rate limiter.
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--v=2",
	}, o.Args...)
	if err := p.start(binary, args...); err != nil {
		_ = c.Stop()
		return nil, err
	}
	readyz := "http://" + health + "/readyz"
	if err := p.waitReady(2*time.Minute, "serving its webhooks ("+readyz+")", func() bool { return httpOK(readyz) }); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// installWebhooks installs CAPI's webhook configurations, from the manifests
// of the module version the CRDs come from, pointed at the port and
// certificates the process serves them with.
func (c *CAPI) installWebhooks(m *Management) error {
	dir, _, err := capiModuleInfo()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "core", "config", "webhook", "manifests.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading CAPI's webhook manifests: %w", err)
	}
	objs, err := utilyaml.ToUnstructured(data)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	for _, u := range objs {
		u.SetName(capiWebhookPrefix + u.GetName())
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			hook := &admissionv1.MutatingWebhookConfiguration{}
			if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hook); err != nil {
				return fmt.Errorf("parsing %s %s of %s: %w", u.GetKind(), u.GetName(), path, err)
			}
			c.webhooks.MutatingWebhooks = append(c.webhooks.MutatingWebhooks, hook)
		case "ValidatingWebhookConfiguration":
			hook := &admissionv1.ValidatingWebhookConfiguration{}
			if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hook); err != nil {
				return fmt.Errorf("parsing %s %s of %s: %w", u.GetKind(), u.GetName(), path, err)
			}
			c.webhooks.ValidatingWebhooks = append(c.webhooks.ValidatingWebhooks, hook)
		}
	}
	c.webhooks.LocalServingHost = "127.0.0.1"
	if err := c.webhooks.Install(m.Config); err != nil {
		return fmt.Errorf("installing CAPI's webhook configurations: %w", err)
	}
	return nil
}

// Stop stops CAPI core and removes its serving certificates. Its webhook
// configurations stay: the control plane stops next.
func (c *CAPI) Stop() error {
	if c == nil {
		return nil
	}
	err := c.process.Stop()
	_ = c.webhooks.Cleanup()
	return err
}

// FreePort returns a TCP port of the loopback interface that was free a
// moment ago, for a process the tests start to listen on.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// httpOK says whether a GET of url answers 200.
func httpOK(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
