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

package corpus

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Valid returns realistic requests that must all be admitted, some with a
// warning.
func Valid() []Case {
	return append([]Case{
		{
			Name:    "minimal policy: stock installer from ghcr",
			Object:  Policy("minimal"),
			Warning: "spec.healthChecks is empty",
		},
		{
			Name:   "version without the v prefix",
			Object: Policy("bare", target("1.13.0")),
		},
		{
			Name: "target from CAPI: the templates name the version, the policy gates",
			Object: Policy("from-templates", target(""), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TargetFrom = upgradev1.TargetFromCAPI
				p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph-health"}}
			}),
		},
		{
			Name:   "Talos and Kubernetes together, through the Talos minors in between",
			World:  concat([]client.Object{Policy("both")}, withKubernetes("v1.34.1", HACluster("k134", "both", "v1.11.5"))),
			Object: Policy("both", kubernetes("v1.35.2"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.UpgradePath = upgradev1.UpgradePathAuto }),
		},
		{
			// Issue 26's example; the releases are listed, or the
			// controller's preflight lists them (a warning says so).
			Name:   "Talos and two Kubernetes minors together, through the minors in between",
			World:  concat([]client.Object{Policy("minors")}, withKubernetes("v1.34.1", HACluster("k134", "minors", "v1.11.5"))),
			Object: Policy("minors", kubernetes("v1.36.0"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.UpgradePath = upgradev1.UpgradePathAuto }),
		},
		{
			Name:    "Kubernetes alone, the next minor, with its kubelets changed undrained",
			World:   concat([]client.Object{Policy("k8s")}, withKubernetes("v1.35.2", HACluster("k135", "k8s", "v1.13.0"))),
			Object:  Policy("k8s", kubernetes("v1.36.0"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Kubelet.Drain = upgradev1.KubeletDrainNever }),
			Warning: `Cluster "k135" goes through Kubernetes v1.36.0 control plane → Talos v1.13.0, kubelets v1.36.0`,
		},
		{
			Name:    "Kubernetes alone, without talosVersion: each Cluster keeps its Talos",
			World:   concat([]client.Object{Policy("keep", target(""), kubernetes("v1.34.1"))}, withKubernetes("v1.34.1", HACluster("k134", "keep", "v1.13.0")), withKubernetes("v1.34.1", HACluster("k134b", "keep", "v1.12.4"))),
			Object:  Policy("keep", target(""), kubernetes("v1.35.2")),
			Warning: `Cluster "k134b" goes through Kubernetes v1.35.2 control plane → Talos v1.12.4, kubelets v1.35.2`,
		},
		{
			Name:  "rolling reboot after a kernel argument change, gated by a health check",
			World: []client.Object{HealthCheck("ceph-health")},
			Object: Policy("reboot", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph-health"}}
				p.Spec.Reboot.After = metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
			}),
		},
		{
			Name:  "bare-metal fleet: Image Factory, schematic, health checks and hooks at every point",
			World: []client.Object{HealthCheck("ceph-health"), HealthCheck("etcd-members")},
			Object: Policy("metal", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal", SchematicID: SchematicID, SecureBoot: ptr.To(false)}
				p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph-health"}, {Name: "etcd-members", Gate: upgradev1.HealthCheckGateFirstMachine}}
				p.Spec.Hooks = []upgradev1.ActionHook{
					hook("ceph-noout", upgradev1.HookPointPreDrain),
					hook("flush-cache", upgradev1.HookPointPreReboot, func(h *upgradev1.ActionHook) {
						h.Timeout, h.Retries = duration(2*time.Minute), ptr.To[int32](3)
						h.Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
					}),
					hook("prove-node", upgradev1.HookPointNodePreReady),
					hook("ceph-unset-noout", upgradev1.HookPointNodeReady, func(h *upgradev1.ActionHook) { h.Template.Spec.Template.Spec.RestartPolicy = "" }),
				}
				p.Spec.FailurePolicy = upgradev1.FailurePolicySpec{Action: upgradev1.FailureActionPause, MaxFailures: ptr.To[int32](2)}
			}),
		},
		{
			Name:  "SecureBoot installer on AWS",
			World: []client.Object{HealthCheck("api-ready")},
			Object: Policy("aws", withCheck("api-ready"), installer(upgradev1.InstallerSpec{
				Source: upgradev1.InstallerSourceFactory, Platform: "aws", SecureBoot: ptr.To(true),
			})),
		},
		{
			Name:  "air-gapped: installer from a private registry with a pull secret",
			World: []client.Object{HealthCheck("api-ready")},
			Object: Policy("airgap", withCheck("api-ready"), installer(upgradev1.InstallerSpec{
				Source: upgradev1.InstallerSourceImage, Repository: "registry.corp.example.com:5000/mirror/siderolabs/installer",
				PullSecretRef: &corev1.LocalObjectReference{Name: "registry-credentials"},
			})),
		},
		{
			Name:  "maintenance windows spanning midnight on weekends, with holidays excluded",
			World: []client.Object{HealthCheck("api-ready")},
			Object: Policy("weekend", withCheck("api-ready"), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{
					Windows: []upgradev1.MaintenanceWindow{
						{Start: "22:00", End: "04:00", Days: []upgradev1.Weekday{"Fri", "Sat"}},
						{Start: "00:00", End: "23:59", Days: []upgradev1.Weekday{"Sun"}},
					},
					ExcludeDates: []string{"2026-12-24", "2026-12-25", "2027-01-01", "2028-02-29"},
				}
			}),
		},
		{
			Name: "a fleet with canaries and a failure budget",
			Object: Policy("fleet", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.MaxClustersInProgress = ptr.To[int32](10)
				p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](2)
				p.Spec.Rollout.Canaries = &upgradev1.CanarySpec{ClusterNames: []string{"staging-eu-1"}, Count: ptr.To[int32](2)}
			}),
		},
		{
			Name: "maintenance windows in a time zone",
			Object: Policy("berlin", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin", Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "05:00"}}}
			}),
		},
		{
			Name:  "run now: an urgent release outside the windows",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Spec.Bypass = &upgradev1.BypassSpec{MaintenanceWindows: true, Reason: "CVE-2026-0001"}
			}),
			Warning: "spec.bypass.maintenanceWindows is true",
		},
		{
			Name:  "big fleet: percentages, ordered groups, delays and several Clusters at once",
			World: []client.Object{HealthCheck("api-ready")},
			Object: Policy("fleet", withCheck("api-ready"), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout = upgradev1.RolloutSpec{
					ControlPlane: upgradev1.ControlPlaneRollout{MaxUnavailable: ptr.To[int32](1)},
					Workers:      upgradev1.WorkerRollout{MaxUnavailable: intOrString(intstr.FromString("25%"))},
					Order: []upgradev1.RolloutGroup{
						{Name: "canary", Selector: selector("tollgate.example.com/canary", "true"), MaxUnavailable: intOrString(intstr.FromInt32(1))},
						{Name: "stateless", Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
							{Key: "node-role.example.com/storage", Operator: metav1.LabelSelectorOpDoesNotExist},
						}}, MaxUnavailable: intOrString(intstr.FromString("100%"))},
					},
					DelayBetweenMachines:  duration(2 * time.Minute),
					MaxClustersInProgress: ptr.To[int32](5),
				}
				p.Spec.RebootTimeout = duration(30 * time.Minute)
				p.Spec.RebootMode = upgradev1.RebootModePowerCycle
				p.Spec.Drain = upgradev1.DrainSpec{Timeout: duration(20 * time.Minute), DeleteEmptyDirData: ptr.To(false)}
			}),
		},
		{
			Name:  "an Auto upgrade path from three minors behind",
			World: concat([]client.Object{HealthCheck("api-ready"), Policy("auto", withCheck("api-ready"), target("v1.10.3"))}, withKubernetes("v1.33.3", HACluster("old", "auto", "v1.10.3"))),
			Object: Policy("auto", withCheck("api-ready"), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.UpgradePath = upgradev1.UpgradePathAuto
			}),
			Warning: "spec.upgradePath",
		},
		{
			Name:  "following patch releases, a week old, in the windows",
			World: []client.Object{HealthCheck("api-ready")},
			Object: Policy("patches", withCheck("api-ready"), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TalosVersion = ""
				p.Spec.Follow = &upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch, CheckInterval: duration(6 * time.Hour), MinReleaseAge: duration(7 * 24 * time.Hour)}
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin", Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "05:00"}}}
			}),
			Warning: "spec.follow: the target is chosen from the stable tags of ghcr.io/siderolabs/installer",
		},
		{
			Name:   "pre-release acknowledged",
			World:  []client.Object{HealthCheck("api-ready")},
			Object: Policy("beta", withCheck("api-ready"), target("v1.13.0-beta.1"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.AllowPrerelease = true }),
		},
		{
			Name:   "HA Clusters one minor behind",
			World:  concat([]client.Object{HealthCheck("api-ready"), Policy("ha", withCheck("api-ready"), target("v1.12.4"))}, HACluster("prod-a", "ha", "v1.12.4"), HACluster("prod-b", "ha", "v1.12.1")),
			Object: Policy("ha", withCheck("api-ready")),
		},
		{
			Name:   "two minors ahead, as the compatibility rules allow",
			World:  concat([]client.Object{HealthCheck("api-ready"), Policy("ha", withCheck("api-ready"), target("v1.11.6"))}, HACluster("prod", "ha", "v1.11.6")),
			Object: Policy("ha", withCheck("api-ready")),
		},
		{
			Name:   "downgrade acknowledged",
			World:  concat([]client.Object{HealthCheck("api-ready"), Policy("back", withCheck("api-ready"))}, HACluster("prod", "back", "v1.13.0")),
			Object: Policy("back", withCheck("api-ready"), target("v1.12.4"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.AllowDowngrade = true }),
		},
		{
			Name: "single control-plane Cluster",
			World: concat([]client.Object{HealthCheck("api-ready"), Policy("edge", withCheck("api-ready"), target("v1.12.4")), Cluster("edge-1", "edge")},
				Machines("edge-1", "cp", 1, true, "v1.12.4")),
			Object:  Policy("edge", withCheck("api-ready")),
			Warning: `Cluster "edge-1" has a single control-plane Machine`,
		},
		{
			Name:   "a policy that names no target: each Cluster's objects say where their Machines go, the policy keeps the gates",
			World:  concat([]client.Object{HealthCheck("api-ready")}, HACluster("gpu-2", "gates", "v1.12.4"), []client.Object{DeclaringDeployment("gpu-2", "gpu-2-md-0", "v1.13.0")}),
			Object: Policy("gates", target(""), withCheck("api-ready")),
		},
		{
			Name: "a MachineDeployment declares another Talos version than the policy: its version wins, and the webhook says so",
			World: concat([]client.Object{Policy("fleet", target("v1.12.4"))}, HACluster("gpu-1", "fleet", "v1.12.4"),
				[]client.Object{DeclaringDeployment("gpu-1", "gpu-1-md-gpu", "v1.12.4"), DeclaringDeployment("gpu-1", "gpu-1-md-0", "v1.13.0")}),
			Object:  Policy("fleet", target("v1.13.0")),
			Warning: `MachineDeployment gpu-1-md-gpu of Cluster gpu-1 declares Talos "v1.12.4" in spec.template.metadata.annotations[upgrade.tollgate.dev/desired-talos-version]: it wins over spec.talosVersion v1.13.0 for its Machines`,
		},
		{
			Name: "many single control-plane Clusters: the warnings are summarised",
			World: concat([]client.Object{HealthCheck("api-ready"), Policy("edge", withCheck("api-ready"), target("v1.12.4"))},
				edgeClusters("edge", 7)),
			Object:  Policy("edge", withCheck("api-ready")),
			Warning: "2 more Clusters have a single control-plane Machine",
		},
		{
			Name:    "health check applied after the policy",
			Object:  Policy("gitops", withCheck("ceph-health")),
			Warning: `ClusterHealthCheck "ceph-health" does not exist in this namespace`,
		},
		// Clusters: GitOps tools and clusterctl move apply objects in any order.
		{
			Name:    "Cluster applied before the policy its label names",
			World:   []client.Object{Policy("p")},
			Object:  Cluster("c", "gitops"),
			Warning: `TalosUpgradePolicy "gitops" does not exist in namespace`,
		},
		{
			Name:    "TalosUpgrade applied before its Cluster (clusterctl move, GitOps)",
			World:   []client.Object{Policy("p")},
			Object:  Upgrade("manual-ghost", "ghost", "p"),
			Warning: `Cluster "ghost" does not exist in namespace`,
		},
		{
			Name:    "TalosUpgrade with Talos and Kubernetes targets applied before its Cluster",
			World:   []client.Object{Policy("p", kubernetes("v1.36.0"))},
			Object:  Upgrade("manual-ghost", "ghost", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.KubernetesVersion = "v1.36.0" }),
			Warning: `Cluster "ghost" does not exist in namespace`,
		},
		{
			Name:   "Kubernetes alone applied before any Cluster selects the policy",
			Object: Policy("keep-later", target(""), kubernetes("v1.36.0")),
		},
		{
			// The Cluster keeps Talos v1.12.4, which does not support the
			// target: the rollout's preflight says so, on the rollout.
			Name:     "controller creates the TalosUpgrade of a Cluster whose Talos does not support the Kubernetes target",
			World:    []client.Object{Policy("keep", target(""), kubernetes("v1.36.0"))},
			Object:   Upgrade("keep-c", "c", "keep", func(u *upgradev1.TalosUpgrade) { u.Spec.TalosVersion, u.Spec.KubernetesVersion = "v1.12.4", "v1.36.0" }),
			Username: ControllerUsername,
		},
		{
			Name:  "TalosUpgrade moved in by clusterctl with its admission: admitted again by the policy",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4")),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
			}),
		},
		{
			Name:    "Cluster with Machines moved to a policy applied later",
			World:   concat([]client.Object{Policy("a")}, HACluster("c", "a", "v1.12.4")),
			Object:  Cluster("c", "b"),
			Warning: `no rollout starts on this Cluster until it is created`,
		},
		{
			Name: "paused while a rollout is in progress",
			World: concat([]client.Object{HealthCheck("api-ready"), Policy("p", withCheck("api-ready"))}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object: Policy("p", withCheck("api-ready"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Paused = true }),
		},
		{
			Name: "health checks bypassed while a rollout is in progress",
			World: concat([]client.Object{HealthCheck("api-ready"), Policy("p", withCheck("api-ready"))}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseWaitingForHealthChecks))}),
			Object: Policy("p", withCheck("api-ready"), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, Reason: "Ceph check broken, see INC-1234"}
			}),
			Warning: "spec.bypass.healthChecks is true",
		},
		{
			// A rollout whose Cluster left its policy ends Detached once
			// its Machines in flight finished: it no longer covers the
			// Cluster, for the controller's preflight as for this webhook.
			Name: "a rollout of a Cluster whose earlier rollout ended Detached",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", Ended(upgradev1.UpgradePhaseDetached))}),
			Object: Upgrade("manual-c", "c", "p"),
		},
		{
			Name: "new target once the rollouts completed",
			World: concat([]client.Object{HealthCheck("api-ready"), Policy("p", withCheck("api-ready"))}, HACluster("c", "p", "v1.13.0"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseCompleted))}),
			Object: Policy("p", withCheck("api-ready"), target("v1.13.1")),
		},
		// ClusterHealthChecks.
		{Name: "health check: Ceph status", Object: HealthCheck("ceph-health")},
		{
			Name: "health check: interval, timeout and restartPolicy left to the defaults, with labels and annotations",
			Object: HealthCheck("etcd-members", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Template.Spec.Template.Spec.RestartPolicy = ""
				c.Spec.Interval, c.Spec.Timeout = nil, nil
				c.Spec.Labels = map[string]string{"app.kubernetes.io/part-of": "tollgate"}
				c.Spec.Annotations = map[string]string{"example.com/owner": "platform-team"}
			}),
		},
		{
			Name: "health check: a long name, hashed into the Job name",
			Object: HealthCheck("prometheus-alertmanager-no-critical-alerts-firing-in-the-last-fifteen-minutes", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				c.Spec.Interval, c.Spec.Timeout = duration(5*time.Second), duration(90*time.Second)
			}),
		},
		// TalosUpgrades.
		{
			Name:   "TalosUpgrade created for a Cluster",
			World:  concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c-old", "c", "p", Ended(upgradev1.UpgradePhaseCompleted))}),
			Object: Upgrade("p-c", "c", "p"),
		},
		{
			Name:     "controller creates a TalosUpgrade its preflight will hold",
			World:    concat([]client.Object{Policy("p", target("v1.10.3"))}, HACluster("old", "p", "v1.10.3")),
			Object:   Upgrade("p-old", "old", "p"),
			Username: ControllerUsername,
		},
		{
			Name:   "user pauses a TalosUpgrade",
			World:  concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.Paused = true }),
		},
		{
			Name:   "user cancels a TalosUpgrade",
			World:  concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.Cancel = true }),
		},
		{
			Name:  "user bypasses the health checks of a TalosUpgrade",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, Reason: "INC-9: the check's image is gone"}
			}),
			Warning: "spec.bypass.healthChecks is true",
		},
		{
			Name:  "user retries a Machine's failed hook and passes the holds of an owner that is gone",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p", withUpgradeHook("noout"))}),
			Object: Upgrade("p-c", "c", "p", withUpgradeHook("noout"), func(u *upgradev1.TalosUpgrade) {
				u.Spec.Bypass = &upgradev1.BypassSpec{
					Machines:   []upgradev1.MachineBypass{{Machine: "c-cp-0", Hook: "noout", Action: upgradev1.HookBypassRetry}},
					HoldOwners: []string{"backup-operator"},
					Reason:     "the hook's RBAC is fixed; the backup operator was uninstalled",
				}
			}),
			Warning: "spec.bypass.holdOwners: the holds of backup-operator are passed",
		},
		{
			Name:     "controller updates the plan of a TalosUpgrade",
			World:    concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object:   Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.TalosVersion = "v1.13.1" }),
			Username: ControllerUsername,
		},
		{
			Name:  "controller admits a TalosUpgrade",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
			}),
			Username: ControllerUsername,
		},
		{
			Name: "user pauses an admitted TalosUpgrade",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
			})}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
				u.Spec.Paused = true
			}),
		},
		// Clusters.
		{Name: "Cluster without the policy label", Object: Cluster("plain", "")},
		{
			Name:   "Cluster created with the label of an existing policy",
			World:  []client.Object{Policy("p")},
			Object: Cluster("c", "p"),
		},
		{
			Name:   "Cluster label added naming an existing policy",
			World:  []client.Object{Policy("p"), Cluster("c", "")},
			Object: Cluster("c", "p"),
		},
		{
			Name:    "running single control-plane Cluster opts in",
			World:   concat([]client.Object{Policy("p"), Cluster("edge-2", "")}, Machines("edge-2", "cp", 1, true, "v1.12.4"), Machines("edge-2", "w", 3, false, "v1.12.4")),
			Object:  Cluster("edge-2", "p"),
			Warning: `Cluster "edge-2" has a single control-plane Machine`,
		},
		{
			Name: "Cluster leaves its policy while a rollout is in progress",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object: Cluster("c", ""),
		},
		{
			Name:  "Cluster updated for something else while its label names a deleted policy",
			World: []client.Object{Policy("p"), Cluster("c", "p"), deleted(Policy("p"))},
			Object: func() client.Object {
				c := Cluster("c", "p")
				c.Spec.Paused = ptr.To(true)
				return c
			}(),
		},
	}, slices.Concat(ValidJobTemplates(), ValidProbes(), ChannelValid())...)
}

// edgeClusters returns n Clusters selecting policy, each with a single
// control-plane Machine on v1.12.4.
func edgeClusters(policy string, n int) []client.Object {
	objs := make([]client.Object, 0, 2*n)
	for i := range n {
		name := fmt.Sprintf("edge-%d", i)
		objs = append(objs, Cluster(name, policy))
		objs = append(objs, Machines(name, "cp", 1, true, "v1.12.4")...)
	}
	return objs
}

// Deleted marks an object of World to be deleted rather than created.
type Deleted struct{ client.Object }

func deleted(o client.Object) client.Object { return Deleted{o} }

func withCheck(name string) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = append(p.Spec.HealthChecks, upgradev1.HealthCheckRef{Name: name})
	}
}

// withUpgradeHook gives a TalosUpgrade's plan a preDrain hook, as its policy
// would.
func withUpgradeHook(name string) func(*upgradev1.TalosUpgrade) {
	return func(u *upgradev1.TalosUpgrade) {
		u.Spec.Hooks = append(u.Spec.Hooks, hook(name, upgradev1.HookPointPreDrain))
	}
}
