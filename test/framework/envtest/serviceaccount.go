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
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ServiceAccount config/default runs the manager as.
const (
	// ManagerNamespace is the namespace config/default deploys into.
	ManagerNamespace = "tollgate-system"
	// ManagerServiceAccount is the manager's ServiceAccount.
	ManagerServiceAccount = "tollgate-controller-manager"
	// ManagerUsername is the username of the ServiceAccount's requests.
	ManagerUsername = "system:serviceaccount:" + ManagerNamespace + ":" + ManagerServiceAccount
)

// ManagerGroups are the groups the apiserver gives a ServiceAccount of
// ManagerNamespace.
var ManagerGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ManagerNamespace, "system:authenticated"}

// rbacKinds are the kinds of config/default that give the manager its
// permissions.
var rbacKinds = map[string]bool{
	"Namespace": true, "ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

var (
	renderOnce sync.Once
	rendered   []unstructured.Unstructured
	renderErr  error
)

// ManagerRBAC returns the Namespace, ServiceAccount, ClusterRoles, Roles and
// bindings of config/default, rendered as `make release-manifests` renders
// them (hack/tools/render, the kustomize API). It renders once per process.
func ManagerRBAC() ([]unstructured.Unstructured, error) {
	renderOnce.Do(func() {
		cmd := exec.Command("go", "run", "./hack/tools/render", "config/default")
		cmd.Dir = RepoRoot()
		out, err := cmd.Output()
		if err != nil {
			renderErr = fmt.Errorf("rendering config/default with hack/tools/render: %w%s", err, stderrOf(err))
			return
		}
		objs, err := utilyaml.ToUnstructured(out)
		if err != nil {
			renderErr = fmt.Errorf("reading the rendered config/default: %w", err)
			return
		}
		for _, o := range objs {
			if rbacKinds[o.GetKind()] {
				rendered = append(rendered, o)
			}
		}
		// The Namespace first: kustomize orders it after the objects in it.
		namespaceFirst := func(o unstructured.Unstructured) int {
			if o.GetKind() == "Namespace" {
				return 0
			}
			return 1
		}
		slices.SortStableFunc(rendered, func(a, b unstructured.Unstructured) int {
			return cmp.Compare(namespaceFirst(a), namespaceFirst(b))
		})
	})
	return rendered, renderErr
}

// ManagerConfig applies the RBAC of config/default (ManagerRBAC) to the
// control plane and returns a rest.Config that acts as the manager's
// ServiceAccount: the administrator impersonating ManagerUsername with
// ManagerGroups. The apiserver authorizes its requests with RBAC, so the
// manager run with it may do exactly what an installed Tollgate may do; a
// request config/default does not allow is refused as Forbidden.
func (c *ControlPlane) ManagerConfig(ctx context.Context) (*rest.Config, error) {
	objs, err := ManagerRBAC()
	if err != nil {
		return nil, err
	}
	for i := range objs {
		o := objs[i].DeepCopy()
		if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("tollgate-envtest"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying %s %s of config/default: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: ManagerUsername, Groups: append([]string(nil), ManagerGroups...)}
	log := c.forbiddenLog()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recordForbidden{next: rt, log: log} })
	return cfg, nil
}

// ForbiddenRequests returns the requests made with a ManagerConfig of the
// control plane (and every copy of it, by any client or proxy) that the
// apiserver refused as Forbidden, oldest first, as "VERB /path?query". A
// suite checks it after running the manager: a refused event or a refused
// retry may leave no other trace.
func (c *ControlPlane) ForbiddenRequests() []string {
	l := c.forbiddenLog()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// forbiddenLog holds the Forbidden requests of a control plane.
type forbiddenLog struct {
	mu       sync.Mutex
	requests []string
}

// forbiddenLogs maps a control plane's *crenvtest.Environment, which every
// copy of the ControlPlane shares, to its *forbiddenLog.
var forbiddenLogs sync.Map

func (c *ControlPlane) forbiddenLog() *forbiddenLog {
	l, _ := forbiddenLogs.LoadOrStore(c.Env, &forbiddenLog{})
	return l.(*forbiddenLog)
}

// recordForbidden records the requests answered 403 Forbidden.
type recordForbidden struct {
	next http.RoundTripper
	log  *forbiddenLog
}

func (r recordForbidden) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		r.log.mu.Lock()
		r.log.requests = append(r.log.requests, req.Method+" "+req.URL.RequestURI())
		r.log.mu.Unlock()
	}
	return resp, err
}

// stderrOf returns the standard error of a failed command, for its error.
func stderrOf(err error) string {
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + string(ee.Stderr)
	}
	return ""
}
