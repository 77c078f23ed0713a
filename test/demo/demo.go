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

package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// Names of the objects the demo creates.
const (
	namespace   = "tollgate-demo"
	clusterName = "alpha"
	policyName  = "talos-1-13"
	// capiPolicyName is the policy of --capi-driven, which names no version.
	capiPolicyName = "from-templates"
	checkName      = "workload-healthy"
	preHook        = "storage-noout"
	postHook       = "storage-unset-noout"
	holdOwner      = "backup-operator"
)

// config is the demo's command line.
type config struct {
	machines, workers, failCheck int
	reboot, interval, timeout    time.Duration
	hold                         time.Duration
	from, to                     string
	keep, verbose, plain         bool
	// capi runs CAPI core and the providers (sandbox.Options.CAPI);
	// capiDriven makes the upgrade a change of the workers' template that
	// CAPI hands to Tollgate, its in-place update extension.
	capi, capiDriven bool
	// desired keeps the policy on --from and moves the control plane, then
	// the workers' MachineDeployment, by writing --to in their own objects
	// (desired.go).
	desired bool
	// httpCheck makes the health check an http check of endpoint, a
	// server of the demo, instead of a Job.
	httpCheck bool
	endpoint  *healthEndpoint
	// channel plays a ReleaseChannel through three stages of Clusters
	// (channel.go): soak is lab's soak (dev's is twice), approveAfter how
	// long prod waits before alice approves.
	channel            bool
	soak, approveAfter time.Duration
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.machines, "machines", 6, "Number of Machines in the Cluster, control plane and workers together.")
	fs.IntVar(&c.workers, "workers", 3, "How many of the Machines are workers; the others are control-plane Machines (at least one).")
	fs.DurationVar(&c.reboot, "reboot", 2*time.Second, "How long a simulated node takes to reboot.")
	fs.IntVar(&c.failCheck, "fail-check", 1, "How many times the ClusterHealthCheck fails before it passes; each failure holds the rollout for the check's interval.")
	fs.DurationVar(&c.interval, "check-interval", healthchecks.MinInterval, "Interval of the ClusterHealthCheck (at least 5s).")
	fs.DurationVar(&c.hold, "hold", 3*time.Second, "How long a third-party controller (\"backup-operator\") holds the last Machine of the rollout at preDrain with a hook annotation; 0 for no hold.")
	fs.StringVar(&c.from, "from", "v1.12.4", "Talos version the nodes run.")
	fs.StringVar(&c.to, "to", "v1.13.0", "Talos version of the TalosUpgradePolicy.")
	fs.BoolVar(&c.keep, "keep", false, "Leave the sandbox up after the rollout and print a KUBECONFIG to explore it with kubectl; Ctrl-C stops it.")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "Give up when the rollout has not ended after this long.")
	fs.BoolVar(&c.verbose, "verbose", false, "Write the manager's logs to stderr.")
	fs.BoolVar(&c.plain, "plain", false, "Print a line per change even on a terminal, instead of redrawing in place.")
	fs.BoolVar(&c.capi, "capi", true, "Run Cluster API core and the providers (the Talos-simulator infrastructure provider, stand-ins for the Talos bootstrap and control-plane providers): CAPI makes the Cluster's Machines. --capi=false makes them by hand, with no CAPI controller.")
	fs.BoolVar(&c.httpCheck, "http-check", false, "Make the ClusterHealthCheck an http check: a GET the manager sends to a health endpoint the demo serves, which answers 503 --fail-check times first; no Job runs.")
	fs.BoolVar(&c.channel, "channel", false, "Move the release through a ReleaseChannel of three stages, a Cluster each (lab, dev, prod; --machines and --workers per Cluster): lab soaks it, dev soaks it while an analysis measures every Cluster's error ratio in Prometheus, prod waits for an approval, which the demo gives as alice.")
	fs.DurationVar(&c.soak, "soak", 15*time.Second, "With --channel: lab's soak time; dev's is twice as long.")
	fs.DurationVar(&c.approveAfter, "approve-after", 5*time.Second, "With --channel: how long prod waits for an approval before alice gives it.")
	fs.BoolVar(&c.capiDriven, "capi-driven", false, "Upgrade the workers the GitOps way: Tollgate serves as CAPI's in-place update extension, the policy has targetFrom: CAPI, and the demo points the MachineDeployment at a new template with the --to installer; CAPI updates every worker in place through Tollgate's gates (the control plane stays on --from).")
	fs.BoolVar(&c.desired, "desired-versions", false, "Keep the policy on --from and move the Cluster one object at a time by editing its CAPI objects, as Git changes do: the demo writes --to in the TalosControlPlane's upgrade.tollgate.dev/desired-talos-version annotation, then in the workers' MachineDeployment's spec.template.metadata; Tollgate carries the Machines of each through the gates, no CAPI rollout.")
	fs.Usage = func() {
		printf(stderr, "Usage: make demo DEMO_ARGS=\"[flags]\"   (or go run ./test/cmd/demo [flags])\n\n"+
			"Runs Tollgate's manager against a local sandbox and rolls a Talos upgrade across a simulated Cluster.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case c.workers < 0 || c.machines-c.workers < 1:
		return nil, fmt.Errorf("--machines %d with --workers %d leaves no control-plane Machine: the Cluster needs at least one", c.machines, c.workers)
	case c.failCheck < 0:
		return nil, fmt.Errorf("--fail-check must be 0 or more, got %d", c.failCheck)
	case c.interval < healthchecks.MinInterval:
		return nil, fmt.Errorf("--check-interval must be at least %s (the API's minimum), got %s", healthchecks.MinInterval, c.interval)
	case c.hold < 0:
		return nil, fmt.Errorf("--hold must be 0 or more, got %s", c.hold)
	case c.reboot <= 0:
		return nil, fmt.Errorf("--reboot must be positive, got %s", c.reboot)
	case c.capiDriven && !c.capi:
		return nil, errors.New("--capi-driven needs --capi: CAPI core drives the update")
	case c.capiDriven && c.workers < 1:
		return nil, errors.New("--capi-driven updates the workers' MachineDeployment: it needs --workers of at least 1")
	case c.desired && !c.capi:
		return nil, errors.New("--desired-versions needs --capi: the versions are written in CAPI's objects")
	case c.desired && c.capiDriven:
		return nil, errors.New("--desired-versions moves the Cluster by its own objects under a policy's gates: give it without --capi-driven")
	case c.channel && (c.capiDriven || c.httpCheck || c.desired):
		return nil, errors.New("--channel plays its own stages and analysis: give it without --capi-driven, --http-check and --desired-versions")
	case c.channel && c.soak < 5*time.Second:
		return nil, fmt.Errorf("--soak must be at least 5s, the analysis' interval, got %s", c.soak)
	}
	if c.channel && !fs.Changed("machines") && !fs.Changed("workers") {
		// A Cluster of one control-plane Machine per stage: three Clusters
		// in two minutes.
		c.machines, c.workers = 1, 0
	}
	return c, nil
}

// Run runs the demo with the command-line arguments args, writing to out
// (redrawn in place when out is a terminal) and errors to errOut. It
// returns the process exit code: 0 when the rollout completed.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	c, err := parse(args, errOut)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		printf(errOut, "demo: %v\n", err)
		return 2
	}
	setLoggers(c.verbose, errOut)
	runner := run
	if c.channel {
		runner = runChannel
	}
	if err := runner(ctx, c, out); err != nil {
		printf(errOut, "demo: %v\n", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, c *config, out io.Writer) error {
	start := time.Now()
	say := func(format string, args ...any) {
		printf(out, "[%6s] %s\n", rolloutview.FormatDuration(time.Since(start)), fmt.Sprintf(format, args...))
	}
	if err := ensureAssets(out); err != nil {
		return err
	}
	children := "kube-apiserver, etcd and kube-controller-manager"
	if c.capi {
		children = "kube-apiserver, etcd, kube-controller-manager and Cluster API's core manager"
	}
	say("Starting the sandbox: no cluster, no container engine; everything below runs in this process or as a child %s", children)
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Webhooks:          true,
		JobController:     true,
		CAPI:              c.capi,
		Extension:         c.capiDriven,
		InstallerVersions: []string{c.to},
		RebootDuration:    c.reboot,
		Logf:              say,
	})
	if err != nil {
		return err
	}
	defer func() {
		stopped := time.Now()
		if err := sb.Stop(); err != nil {
			// CAPI's ClusterCache keeps its workload watches open after the
			// manager stops, and envtest kills an apiserver that waits on
			// them after its stop timeout.
			say("Stopped the sandbox in %s (%v: killed)", rolloutview.FormatDuration(time.Since(stopped)), err)
			return
		}
		say("Stopped the sandbox in %s", rolloutview.FormatDuration(time.Since(stopped)))
	}()
	if err := sb.StartManager(ctx, manager.Options{}); err != nil {
		return err
	}
	cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: namespace, Name: clusterName,
		ControlPlanes: c.machines - c.workers, Workers: c.workers, TalosVersion: c.from,
		InPlaceUpdates: c.capiDriven,
	})
	if err != nil {
		return err
	}
	if c.capiDriven {
		say("Labelled Namespace %s with %s=%s: CAPI asks Tollgate to update its Machines in place", namespace, upgradev1.InPlaceUpdatesNamespaceLabel, upgradev1.InPlaceUpdatesEnabled)
	}
	if c.httpCheck {
		c.endpoint = startHealthEndpoint(c.failCheck)
		defer c.endpoint.Close()
	}
	if err := prepareRollout(ctx, sb, cl, c, say); err != nil {
		return err
	}
	workers, err := cl.MachineNames(ctx, sandbox.RoleWorker)
	if err != nil {
		return err
	}
	if c.capiDriven {
		template, err := cl.SetWorkersTalosVersion(ctx, c.to)
		if err != nil {
			return err
		}
		say("Pointed MachineDeployment %s at TalosSimMachineTemplate %s (image %s:%s), as a Git change does: CAPI asks Tollgate to update the workers in place",
			sandbox.WorkersName(clusterName), template, sb.InstallerRepository(), c.to)
	}
	printLine(out)

	tty := !c.plain && isTerminal(out)
	live := rolloutview.NewLive(out, rolloutview.LiveOptions{Redraw: tty, Color: tty, Start: start})
	var follow follower = followRollout
	switch {
	case c.capiDriven:
		follow = followCAPIDriven(c.to, len(workers))
	case c.desired:
		follow = followDesired(len(workers), c.to, say)
	}
	f, err := follow(ctx, sb, c.timeout, live)
	if err != nil {
		return err
	}
	printLine(out)
	writeSummary(out, f, cl.Workload.Jobs, c.endpoint)
	u := f.upgrade
	if u.Status.Phase != upgradev1.UpgradePhaseCompleted {
		return fmt.Errorf("the rollout ended %s: %s", u.Status.Phase, u.Status.BlockedBy)
	}
	if c.capi {
		if err := reportNodeInfo(ctx, sb.Management.Client, c, out); err != nil {
			return err
		}
	}
	switch {
	case c.capiDriven:
		if err := sameWorkers(ctx, cl, workers, "by CAPI through Tollgate", out); err != nil {
			return err
		}
	case c.desired:
		if err := sameWorkers(ctx, cl, workers, "by Tollgate, to the version their MachineDeployment declares", out); err != nil {
			return err
		}
	}
	say("Done: the demo took %s", rolloutview.FormatDuration(time.Since(start)))
	if c.keep {
		return keep(ctx, sb, cl, out)
	}
	return nil
}

// prepareRollout scripts the health check, creates the policy, holds the
// last Machine (the last worker by name, the last the rollout reaches) and
// opts the Cluster in to the policy.
func prepareRollout(ctx context.Context, sb *sandbox.Sandbox, cl *sandbox.Cluster, c *config, say func(string, ...any)) error {
	cl.Workload.Jobs.Script(jobdriver.NamePrefix(healthchecks.JobName(checkName, clusterName)), failures(c.failCheck)...)
	if err := createPolicy(ctx, sb, c); err != nil {
		return err
	}
	target := "to " + c.to
	switch {
	case c.capiDriven:
		target = "with targetFrom: CAPI (the version the workers' template names)"
	case c.desired:
		target = "to " + c.from + " (it keeps the Cluster; its objects will say where each part goes)"
	}
	kind := "a Job"
	if c.endpoint != nil {
		kind = "http, GET " + c.endpoint.srv.URL + "/healthz"
	}
	say("Created TalosUpgradePolicy %s/%s %s: ClusterHealthCheck %q (%s) every %s (fails %d time(s) first), hooks %q (preReboot) and %q (nodeReady)",
		namespace, c.policyName(), target, checkName, kind, c.interval, c.failCheck, preHook, postHook)
	if c.hold > 0 {
		machine := cl.Fixture.Machines[len(cl.Fixture.Machines)-1]
		if err := holdMachine(ctx, sb, machine, c.hold); err != nil {
			return err
		}
		say("Annotated Machine %s with %s: %q holds it before its drain, for %s once it is reached", machine.Name,
			hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, holdOwner), holdOwner, c.hold)
	}
	if err := cl.OptIn(ctx, c.policyName()); err != nil {
		return err
	}
	if c.capiDriven {
		say("Labelled Cluster %s/%s with %s=%s: its gates apply to what CAPI hands over", namespace, clusterName, upgradev1.PolicyLabel, c.policyName())
		return nil
	}
	say("Labelled Cluster %s/%s with %s=%s: the rollout starts", namespace, clusterName, upgradev1.PolicyLabel, c.policyName())
	return nil
}

// policyName is the name of the demo's policy.
func (c *config) policyName() string {
	if c.capiDriven {
		return capiPolicyName
	}
	return policyName
}

// failures scripts n failing runs of the health check; later runs pass.
func failures(n int) []jobdriver.Outcome {
	outcomes := make([]jobdriver.Outcome, 0, n)
	for i := range n {
		outcomes = append(outcomes, jobdriver.Outcome{
			Fail:    true,
			Message: fmt.Sprintf("2 of 14 Pods not Ready in kube-system: coredns-7c65d6cfc9-x2x5p, cilium-9kq4d (simulated failure %d of %d)", i+1, n),
		})
	}
	return outcomes
}

func createPolicy(ctx context.Context, sb *sandbox.Sandbox, c *config) error {
	check := sandbox.HealthCheck(namespace, checkName, c.interval, "kubectl", "wait", "--for=condition=Ready", "pods", "--all", "-n", "kube-system", "--timeout=10s")
	if c.endpoint != nil {
		check = c.endpoint.check(c.interval)
	}
	if err := sb.Management.Client.Create(ctx, check); err != nil {
		return fmt.Errorf("creating ClusterHealthCheck %s/%s: %w", namespace, checkName, err)
	}
	target := c.to
	if c.desired {
		target = c.from // The Cluster's objects say where each part goes.
	}
	policy := sb.Policy(namespace, c.policyName(), target, func(p *upgradev1.TalosUpgradePolicy) {
		if c.capiDriven {
			p.Spec.TalosVersion, p.Spec.TargetFrom = "", upgradev1.TargetFromCAPI
		}
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: checkName}}
		p.Spec.Hooks = []upgradev1.ActionHook{
			sandbox.ActionHook(preHook, upgradev1.HookPointPreReboot, "sh", "-c", "ceph osd set noout"),
			sandbox.ActionHook(postHook, upgradev1.HookPointNodeReady, "sh", "-c", "ceph osd unset noout"),
		}
	})
	if err := sb.Management.Client.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating TalosUpgradePolicy %s/%s: %w", namespace, c.policyName(), err)
	}
	return nil
}

// keep leaves the sandbox up until ctx is done, with kubeconfigs to
// explore it.
func keep(ctx context.Context, sb *sandbox.Sandbox, cl *sandbox.Cluster, out io.Writer) error {
	dir, err := os.MkdirTemp("", "tollgate-demo-")
	if err != nil {
		return fmt.Errorf("creating a directory for the kubeconfigs: %w", err)
	}
	// The kubeconfigs name control planes that stop with the demo.
	defer func() { _ = os.RemoveAll(dir) }()
	path, err := sb.WriteKubeconfig(dir)
	if err != nil {
		return err
	}
	workload := filepath.Join(dir, clusterName+".kubeconfig")
	if err := os.WriteFile(workload, cl.Workload.Kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", workload, err)
	}
	printf(out, "\nThe sandbox stays up, the manager keeps running; Ctrl-C stops both.\n\n"+
		"  export KUBECONFIG=%s\n"+
		"  kubectl get talosupgrades,talosupgradepolicies,clusterhealthchecks -n %s\n"+
		"  kubectl get talosupgrade %s -n %s -o yaml\n"+
		"  kubectl get clusters,machines,machinedeployments,taloscontrolplanes -n %s\n\n"+
		"The workload cluster (Nodes, health-check and hook Jobs): KUBECONFIG=%s kubectl get nodes,jobs -A\n",
		path, namespace, clusterName, namespace, namespace, workload)
	<-ctx.Done()
	printLine(out)
	return nil
}

// ensureAssets makes sure KUBEBUILDER_ASSETS is set, running
// hack/envtest-assets.sh (which may build the binaries) when it is not.
func ensureAssets(out io.Writer) error {
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		return nil
	}
	printLine(out, "KUBEBUILDER_ASSETS is not set: running hack/envtest-assets.sh; a first run builds kube-apiserver, etcd, kube-controller-manager and Cluster API's core manager from source (26 minutes on a 2-core machine), later runs use the cache")
	start := time.Now()
	cmd := exec.Command(filepath.Join(envtest.RepoRoot(), "hack", "envtest-assets.sh"))
	cmd.Stderr = os.Stderr
	dir, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("providing the envtest binaries with hack/envtest-assets.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(dir)), "\n")
	printf(out, "envtest binaries ready in %s: %s\n", rolloutview.FormatDuration(time.Since(start)), lines[len(lines)-1])
	return os.Setenv("KUBEBUILDER_ASSETS", lines[len(lines)-1])
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// loggersSet makes setLoggers act once per process.
var loggersSet sync.Once

// setLoggers silences the manager and client-go, or sends their logs to
// w with verbose. The loggers are the process's: the first Run sets them,
// and a later Run in the same process (the tests run the demo twice) keeps
// them, as informers of the earlier demo may still be logging while they
// wind down.
func setLoggers(verbose bool, w io.Writer) {
	loggersSet.Do(func() {
		l := logr.Discard()
		if verbose {
			l = zap.New(zap.UseDevMode(true), zap.WriteTo(w))
		}
		ctrl.SetLogger(l)
		klog.SetLogger(l)
	})
}
