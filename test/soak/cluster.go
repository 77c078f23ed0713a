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

package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Names of the soak's policy objects in every Cluster's namespace.
const (
	policyName = "soak"
	checkName  = "flappy"
	hookName   = "prep"
	// removalHookName is the policies' preRemoval hook (invariant 14).
	removalHookName = "drain-out"
)

// installerVersions are the installer images in the soak's registry: the
// targets, and the next targets set once a rollout completed.
var installerVersions = []string{"v1.13.0", "v1.13.1", "v1.13.2"}

// nextVersion is the target set after a rollout to v completed.
func nextVersion(v string) string {
	if i := slices.Index(installerVersions, v); i >= 0 && i+1 < len(installerVersions) {
		return installerVersions[i+1]
	}
	return ""
}

// targetChange is a target version and when the soak set it.
type targetChange struct {
	version string
	at      time.Time
}

// soakCluster is one Cluster of a round and the faults scripted for it.
type soakCluster struct {
	ns, name string
	wl       *workload
	// cluster is the sandbox's Cluster; sim and fixture are its
	// simulator and fixture.
	cluster *sandbox.Cluster
	sim     *talossim.Simulator
	fixture *builder.Fixture
	// from is the version every node runs at first, joiners included; to
	// is the first target.
	from, to string
	// terminal is the Talos fault that should end the rollout
	// (faultUpgradeError, faultRollback, faultNeverComesBack), on
	// terminalNode; empty for none.
	terminal, terminalNode string
	// maxUnavailable is the policy's worker budget.
	maxUnavailable int
	// flaps is how many health-check runs are scripted to fail.
	flaps int
	// fleet are the living-fleet events scripted for the Cluster.
	fleet []string

	mu sync.Mutex
	// targets are the targets set, the first at creation.
	targets []targetChange
	// optedIn is when the soak first opted the Cluster in to its policy,
	// and detached the intervals in which it was out of it since.
	optedIn  time.Time
	detached []interval
	// gone are the Machines CAPI deleted (scale-down, remediation, a
	// MachineDeployment rollout), by name, with when the observer first saw
	// them deleting or gone.
	gone map[string]time.Time
	// killed are the nodes the soak killed (their Node NotReady, their
	// Talos API silent for good), with when: a MachineHealthCheck
	// remediates their Machines.
	killed map[string]time.Time
	// reboots are the reboots the soak asked for (invariant 13), and
	// bootLogs the boots of each node the poller saw, by node name.
	reboots  []rebootRequest
	bootLogs map[string]*bootLog
	// removals are what the observer saw of the Machines CAPI deletes
	// and of Tollgate's deletion hook on them, by Machine name
	// (invariants 1 and 14).
	removals map[string]*removalTrack
	// config is what the soak set in the patches of the Cluster's
	// TalosControlPlane (invariant 15).
	config cpConfig

	// configMu makes the changes of the control plane's patches one at a
	// time; taken before mu.
	configMu sync.Mutex

	// kubernetes says the Cluster is Kubernetes-capable: its
	// MachineDeployment rolls out OnDelete (kubernetes.go).
	kubernetes bool
	// kube is the Kubernetes target the soak set, and kubeLogs what the
	// boot poller saw of each node's Kubernetes, by node name (invariants 3
	// and 16).
	kube     kubeTarget
	kubeLogs map[string]*kubeLog
	// targetClaimed is the kind of the last new target (Talos or
	// Kubernetes) set on the Cluster for another Cluster's event, "" for
	// none (see targetOrOthers).
	targetClaimed string
	// extension says the Cluster's namespace opts in to Tollgate's in-place
	// update extension; its workers' template is changed mid-round
	// (extension.go, invariant 18).
	extension bool
	// claimable says the template change of an extension Cluster is one
	// Tollgate claims (scriptExtension).
	claimable bool
	// declared is the Talos version the workers' MachineDeployment
	// declares (faultDeclareVersion), "" for none; guarded by mu.
	declared string
}

// declaredVersion returns the version the workers' MachineDeployment
// declares, "" for none.
func (c *soakCluster) declaredVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.declared
}

// isGone reports whether CAPI deleted the Machine, and since when.
func (c *soakCluster) isGone(machine string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.gone[machine]
	return t, ok
}

// killedAt reports whether the soak killed the node, and when.
func (c *soakCluster) killedAt(node string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.killed[node]
	return t, ok
}

// target returns the current target version.
func (c *soakCluster) target() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.targets[len(c.targets)-1].version
}

// targetAt returns the target version set at t.
func (c *soakCluster) targetAt(t time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.targets[0].version
	for _, tc := range c.targets[1:] {
		if !tc.at.After(t) {
			v = tc.version
		}
	}
	return v
}

// detachedAt reports whether the Cluster was out of its policy during all
// of [from, to].
func (c *soakCluster) detachedAt(from, to time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, iv := range c.detached {
		if !from.Before(iv.from) && (iv.to.IsZero() || !to.After(iv.to)) {
			return true
		}
	}
	return false
}

// nodes returns the names of the Cluster's nodes.
func (c *soakCluster) nodes() []string {
	nodes := c.sim.Nodes()
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name())
	}
	return out
}

// createCluster creates one Cluster as a user does with Cluster API (CAPI
// makes its Machines, the infrastructure provider boots their simulated
// Talos nodes), its Secrets with planted canaries, its
// MachineHealthCheck, policy, health check and hook. It does not script
// its faults (scriptFaults) nor opt it in. It may run on several
// goroutines.
func (s *soak) createCluster(ctx context.Context, round, i int, kube, extension bool) (*soakCluster, error) {
	c := &soakCluster{
		ns: fmt.Sprintf("soak-r%d-c%d", round, i), name: fmt.Sprintf("r%dc%d", round, i),
		wl: s.world.workloads[i%len(s.world.workloads)], maxUnavailable: s.cfg.MaxUnavailable,
		from: "v1.12.4", to: "v1.13.0", gone: map[string]time.Time{}, killed: map[string]time.Time{},
		kubernetes: kube, extension: extension,
	}
	if i%2 == 1 {
		// Half the Clusters take the Talos 1.13 lifecycle API.
		c.from, c.to = "v1.13.0", "v1.13.1"
	}
	c.targets = []targetChange{{version: c.to}}
	var err error
	// CAPI makes the Machines: a TalosControlPlane and a MachineDeployment
	// as in templates/cluster-template-talos.yaml. The TalosControlPlane
	// rolls out OnDelete: a change of its patches replaces no Machine, and
	// Tollgate brings it to the nodes in place (invariant 15). Nothing of
	// the soak relies on RollingUpdate: it never changes the
	// TalosControlPlane otherwise, nor deletes a control-plane Machine. The
	// MachineDeployment of a Kubernetes-capable Cluster rolls out OnDelete
	// too, so that a new Kubernetes version replaces no worker; the others
	// roll out RollingUpdate, for the template-rollout event.
	var workers func(*clusterv1.MachineDeployment)
	if kube {
		workers = func(md *clusterv1.MachineDeployment) {
			md.Spec.Rollout.Strategy = clusterv1.MachineDeploymentRolloutStrategy{Type: clusterv1.OnDeleteMachineDeploymentStrategyType}
		}
	}
	c.cluster, err = s.world.sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: c.ns, Name: c.name, ControlPlanes: s.cfg.ControlPlanes, Workers: s.cfg.Workers, TalosVersion: c.from,
		KubernetesVersion: kubernetesFrom,
		ControlPlane: func(tcp *controlplanev1.TalosControlPlane) {
			tcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{Type: controlplanev1.OnDeleteStrategyType}
		},
		MachineDeployment: workers,
		Workload:          c.wl.Workload,
		Kubeconfig:        func(*sandbox.Workload) ([]byte, error) { return c.wl.kubeconfig, nil },
		OnCall:            func(call talossim.Call) { s.checkCall(c, call) },
		Secret:            func(secret *corev1.Secret) { s.plantCanary(c, secret) },
		InPlaceUpdates:    extension,
	})
	if err != nil {
		return nil, err
	}
	c.sim, c.fixture = c.cluster.Simulator, c.cluster.Fixture
	mgmt := s.world.mgmt.Client
	if err := mgmt.Create(ctx, machineHealthCheck(c)); err != nil {
		return nil, fmt.Errorf("creating MachineHealthCheck %s/%s: %w", c.ns, sandbox.WorkersName(c.name), err)
	}
	if err := mgmt.Create(ctx, healthCheck(c.ns)); err != nil {
		return nil, fmt.Errorf("creating ClusterHealthCheck %s/%s: %w", c.ns, checkName, err)
	}
	if err := mgmt.Create(ctx, s.policy(c, round)); err != nil {
		return nil, fmt.Errorf("creating TalosUpgradePolicy %s/%s: %w", c.ns, policyName, err)
	}
	return c, nil
}

// plantCanary adds a canary value to a Secret of the Cluster before it is
// written, and registers it and the Secret's key material with the
// canaries the controllers' logs are searched for.
func (s *soak) plantCanary(c *soakCluster, secret *corev1.Secret) {
	if strings.HasSuffix(secret.Name, "-kubeconfig") {
		canary := fmt.Sprintf("SOAK-CANARY-KUBECONFIG-%d-%s", s.cfg.Seed, c.name)
		secret.Data["soak-canary"] = []byte(canary)
		s.canaries.Add("kubeconfig Secret canary", []byte(canary))
		s.canaries.Add("kubeconfig Secret value", secret.Data["value"])
		return
	}
	canary := fmt.Sprintf("SOAK-CANARY-TALOSCONFIG-%d-%s", s.cfg.Seed, c.name)
	secret.Data["soak-canary"] = []byte(canary)
	s.canaries.Add("talosconfig Secret canary", []byte(canary))
	for k, v := range secret.Data {
		s.canaries.Add("talosconfig Secret "+k, v)
		s.canaries.AddKeyMaterial("talosconfig", v)
	}
}

// scriptFaults scripts the health check to flap, one hook run to fail once
// and the terminal Talos fault, if any.
func (s *soak) scriptFaults(c *soakCluster, terminal string) {
	runs := 3 + s.rng.IntN(4)
	outcomes := make([]jobdriver.Outcome, 0, runs)
	for range runs {
		fail := s.rng.IntN(100) < 40
		if fail {
			c.flaps++
		}
		outcomes = append(outcomes, jobdriver.Outcome{Fail: fail, Message: "soak: flapping check"})
	}
	if c.flaps == 0 {
		outcomes[0].Fail, c.flaps = true, 1
	}
	c.wl.Jobs.Script(jobdriver.HasLabels(map[string]string{
		workloadjob.ClusterLabel: workloadjob.LabelValue(c.name), workloadjob.HealthCheckLabel: checkName,
	}), outcomes...)
	s.count(faultCheckFlap, c.flaps)

	nodes := c.nodes()
	hooked := c.fixture.Machines[s.rng.IntN(len(c.fixture.Machines))].Name
	c.wl.Jobs.Script(jobdriver.HasLabels(map[string]string{
		workloadjob.ClusterLabel: workloadjob.LabelValue(c.name), workloadjob.HookLabel: hookName,
		workloadjob.MachineLabel: workloadjob.LabelValue(hooked),
	}), jobdriver.Outcome{Fail: true, Message: "soak: hook fails once"})
	s.count(faultHookFailOnce, 1)

	if terminal == "" {
		return
	}
	c.terminal, c.terminalNode = terminal, nodes[s.rng.IntN(len(nodes))]
	var f talossim.Faults
	switch terminal {
	case faultNodeSilent:
		// Injected by the fleet loop once the node's drain began.
		s.count(terminal, 1)
		return
	case faultUpgradeError:
		f.UpgradeExitCode = 1
	case faultRollback:
		f.Rollback = true
	case faultNeverComesBack:
		f.NeverComesBack = true
	}
	c.sim.Node(c.terminalNode).InjectFault(f)
	s.count(terminal, 1)
}

// The timeouts of the soak's policies.
const (
	drainTimeout           = 20 * time.Second
	rebootTimeout          = 30 * time.Second
	nodeUnreachableTimeout = 10 * time.Second
)

// policy is the Cluster's policy: maxUnavailable workers, the flapping
// health check, a preDrain and a preRemoval hook, short drain, reboot and
// node-unreachable timeouts, and Halt or Pause.
func (s *soak) policy(c *soakCluster, round int) *upgradev1.TalosUpgradePolicy {
	return s.world.sb.Policy(c.ns, policyName, c.to, func(p *upgradev1.TalosUpgradePolicy) {
		mu := intstr.FromInt32(int32(c.maxUnavailable)) //nolint:gosec // A small flag value.
		one := int32(1)
		hook := sandbox.ActionHook(hookName, upgradev1.HookPointPreDrain, "true")
		hook.Retries = &one
		p.Spec.Rollout.Workers.MaxUnavailable = &mu
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: checkName}}
		p.Spec.Hooks = []upgradev1.ActionHook{hook, sandbox.ActionHook(removalHookName, upgradev1.HookPointPreRemoval, "true")}
		p.Spec.Drain = upgradev1.DrainSpec{Timeout: &metav1.Duration{Duration: drainTimeout}}
		p.Spec.RebootTimeout = &metav1.Duration{Duration: rebootTimeout}
		// A silent node fails fast (the smallest value the API takes).
		p.Spec.NodeUnreachableTimeout = &metav1.Duration{Duration: nodeUnreachableTimeout}
		if (round+len(c.name))%2 == 1 {
			p.Spec.FailurePolicy.Action = upgradev1.FailureActionPause
		}
	})
}

func healthCheck(ns string) *upgradev1.ClusterHealthCheck {
	check := sandbox.HealthCheck(ns, checkName, checkInterval, "true")
	// Bounds the stall after a kill leaves the recorded run and the Job of
	// another run apart (see the report of issue 9).
	check.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Second}
	return check
}

// upgradeCalls counts the upgrade calls a node received, with either API.
func (c *soakCluster) upgradeCalls(node string) int {
	return c.sim.Calls(node, talossim.RPCUpgrade) + c.sim.Calls(node, talossim.RPCLegacyUpgrade)
}

// upgradeCallsByTarget counts the upgrades a node received for each target:
// every legacy upgrade call (it installs and reboots), and the installs of
// Talos 1.13 and later by the boot they reached (an install made again
// before the reboot, by a controller that took over and did not know the
// outcome of the first, writes the same image to the same inactive slot: it
// is one upgrade). A call counts for the target set when it arrived.
func (c *soakCluster) upgradeCallsByTarget(node string) map[string]int {
	out := map[string]int{}
	installed := map[[2]string]bool{}
	for _, call := range c.sim.CallLog() {
		if call.Node != node {
			continue
		}
		target := c.targetAt(call.Time)
		switch call.RPC {
		case talossim.RPCLegacyUpgrade:
			out[target]++
		case talossim.RPCUpgrade:
			if key := [2]string{target, call.BootID}; !installed[key] {
				installed[key] = true
				out[target]++
			}
		}
	}
	return out
}
