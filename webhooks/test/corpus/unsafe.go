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
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Unsafe returns requests that must be refused, one or more per rule; the
// Job template shapes that could pass without their container deciding are
// UnsafeJobTemplates.
func Unsafe() []Case {
	return append([]Case{
		// 1. A step some Machine cannot take directly: the message names the intermediate version.
		{
			Name:    "target more than the supported minors ahead of a Machine",
			World:   concat([]client.Object{Policy("p", target("v1.10.3"))}, HACluster("old", "p", "v1.10.3")),
			Object:  Policy("p"),
			Field:   "spec.talosVersion",
			Message: "upgrade to v1.12 first",
		},
		// 2. A downgrade without allowDowngrade.
		{
			Name:    "downgrade without allowDowngrade",
			World:   concat([]client.Object{Policy("p")}, HACluster("new", "p", "v1.13.0")),
			Object:  Policy("p", target("v1.12.4")),
			Field:   "spec.talosVersion",
			Message: "set allowDowngrade",
		},
		// 3. A target that does not support the Cluster's Kubernetes version.
		{
			Name:    "target does not support the Kubernetes version",
			World:   concat([]client.Object{Policy("p", target("v1.12.4"))}, withKubernetes("v1.30.4", HACluster("k130", "p", "v1.12.4"))),
			Object:  Policy("p"),
			Field:   "spec.talosVersion",
			Message: "version of Kubernetes 1.30.4 is too old to be used with Talos 1.13.0",
		},
		// 3b. Kubernetes targets the plan cannot reach.
		{
			Name:    "Kubernetes downgrade",
			World:   concat([]client.Object{Policy("p")}, withKubernetes("v1.35.2", HACluster("k135", "p", "v1.13.0"))),
			Object:  Policy("p", kubernetes("v1.34.3")),
			Field:   "spec.kubernetesVersion",
			Message: `Cluster "k135" runs or is asked to run Kubernetes v1.35.2, newer than the target: Kubernetes is never downgraded`,
		},
		{
			Name:    "Kubernetes target older than a node runs",
			World:   concat([]client.Object{Policy("p")}, withKubernetes("v1.35.2", HACluster("k135", "p", "v1.13.0")[:4]), withKubernetes("v1.35.0", HACluster("k135", "p", "v1.13.0")[4:])),
			Object:  Policy("p", kubernetes("v1.35.1")),
			Field:   "spec.kubernetesVersion",
			Message: "Kubernetes v1.35.2, newer than the target",
		},
		{
			// Auto plans through the minors in between: see valid.go and
			// TestKubernetesMinorsExplained for a minor the registry lacks.
			Name:    "Kubernetes skip of a minor with a Direct path",
			World:   concat([]client.Object{Policy("p")}, withKubernetes("v1.34.1", HACluster("k134", "p", "v1.13.0"))),
			Object:  Policy("p", kubernetes("v1.36.0")),
			Field:   "spec.kubernetesVersion",
			Message: "moves one minor at a time; upgrade to 1.35 first; or set upgradePath: Auto for Tollgate to plan through the minors in between",
		},
		{
			Name:    "Kubernetes no Talos target supports",
			World:   concat([]client.Object{Policy("p", target("v1.12.4"))}, withKubernetes("v1.35.2", HACluster("k135", "p", "v1.12.4"))),
			Object:  Policy("p", target("v1.12.4"), kubernetes("v1.36.0")),
			Field:   "spec.kubernetesVersion",
			Message: `Cluster "k135" would run Talos v1.12.4 with Kubernetes v1.36.0`,
		},
		{
			Name:    "Kubernetes alone on a Talos that does not support it",
			World:   concat([]client.Object{Policy("p", target(""), kubernetes("v1.35.2"))}, withKubernetes("v1.35.2", HACluster("k135", "p", "v1.12.4"))),
			Object:  Policy("p", target(""), kubernetes("v1.36.0")),
			Field:   "spec.kubernetesVersion",
			Message: `Cluster "k135" runs Talos v1.12.4, which does not support Kubernetes v1.36.0`,
		},
		{
			Name:    "Kubernetes target with targetFrom CAPI",
			Object:  Policy("p", target(""), kubernetes("v1.36.0"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TargetFrom = upgradev1.TargetFromCAPI }),
			Field:   "spec.kubernetesVersion",
			Message: "must not be set with targetFrom: CAPI",
		},
		// 3c. What no Talos supports is refused before any Cluster selects
		// the plan: objects arrive in any order, and the Cluster webhook
		// that would refuse the opt-in later fails open.
		{
			Name:    "Talos and Kubernetes targets no Talos supports together, no Cluster yet",
			Object:  Policy("p", kubernetes("v1.13.0")),
			Field:   "spec.kubernetesVersion",
			Message: "Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.13.0; no Talos version this Tollgate build knows supports Kubernetes v1.13.0; choose a Kubernetes version Talos v1.13.0 supports",
		},
		{
			Name:    "user creates a TalosUpgrade for a Cluster not there yet, with targets Talos does not support together",
			Object:  Upgrade("manual-later", "later", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.KubernetesVersion = "v1.30.0" }),
			Field:   "spec.kubernetesVersion",
			Message: "Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.30.0; choose a Kubernetes version Talos v1.13.0 supports, or a Talos version that supports Kubernetes v1.30.0 (Talos 1.7 to 1.12)",
		},
		{
			Name:    "Kubernetes alone, a version no Talos runs, no Cluster yet",
			Object:  Policy("p", target(""), kubernetes("v2.0.0")),
			Field:   "spec.kubernetesVersion",
			Message: "no Talos version this Tollgate build knows supports Kubernetes v2.0.0: Talos supports Kubernetes 1.23 to 1.36",
		},
		{
			Name:    "following releases with a Kubernetes version no Talos runs",
			Object:  Policy("p", following(upgradev1.FollowAllowPatch), kubernetes("v1.13.0")),
			Field:   "spec.kubernetesVersion",
			Message: "no Talos version this Tollgate build knows supports Kubernetes v1.13.0",
		},
		// 4. Rollout pace.
		{
			Name:    "control-plane maxUnavailable 2",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.ControlPlane.MaxUnavailable = ptr.To[int32](2) }),
			Field:   "spec.rollout.controlPlane.maxUnavailable",
			Message: "must be 1: taking more than one control-plane Machine down at once risks etcd quorum",
		},
		{
			Name:    "worker maxUnavailable 0",
			Object:  Policy("p", workers(intstr.FromInt32(0))),
			Field:   "spec.rollout.workers.maxUnavailable",
			Message: "must be at least 1: with 0 no worker would ever be upgraded",
			Schema:  "maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%",
		},
		{
			Name:    "worker maxUnavailable 0%",
			Object:  Policy("p", workers(intstr.FromString("0%"))),
			Field:   "spec.rollout.workers.maxUnavailable",
			Message: "must be at least 1%",
			Schema:  "maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%",
		},
		{
			Name:    "worker maxUnavailable above 100%",
			Object:  Policy("p", workers(intstr.FromString("150%"))),
			Field:   "spec.rollout.workers.maxUnavailable",
			Message: "must be at most 100%",
			Schema:  "maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%",
		},
		{
			Name: "rollout group maxUnavailable 0",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Order = []upgradev1.RolloutGroup{{Name: "storage", Selector: selector("role", "storage"), MaxUnavailable: intOrString(intstr.FromInt32(0))}}
			}),
			Field:   "spec.rollout.order[0].maxUnavailable",
			Message: "must be at least 1: with 0 no worker would ever be upgraded",
		},
		{
			Name: "rollout group maxUnavailable above 100%",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Order = []upgradev1.RolloutGroup{{Name: "storage", Selector: selector("role", "storage"), MaxUnavailable: intOrString(intstr.FromString("101%"))}}
			}),
			Field:   "spec.rollout.order[0].maxUnavailable",
			Message: "must be at most 100%",
		},
		{
			Name: "rollout group maxUnavailable that is not a number or a percentage",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Order = []upgradev1.RolloutGroup{{Name: "storage", Selector: selector("role", "storage"), MaxUnavailable: intOrString(intstr.FromString("half"))}}
			}),
			Field:   "spec.rollout.order[0].maxUnavailable",
			Message: `must be an integer of at least 1 or a percentage from 1% to 100%, such as 2 or "25%"`,
		},
		{
			Name: "rollout group with an empty selector",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.Order = []upgradev1.RolloutGroup{{Name: "all"}}
			}),
			Field:   "spec.rollout.order[0].selector",
			Message: "must select Machines by label",
		},
		// 5. Health-check and hook Jobs.
		{
			Name:    "health-check interval under 5s",
			Object:  HealthCheck("ceph", func(c *upgradev1.ClusterHealthCheck) { c.Spec.Interval = duration(2 * time.Second) }),
			Field:   "spec.interval",
			Message: "must be at least 5s",
			Schema:  "interval must be at least 5s",
		},
		{
			Name:    "health-check timeout zero",
			Object:  HealthCheck("ceph", func(c *upgradev1.ClusterHealthCheck) { c.Spec.Timeout = duration(0) }),
			Field:   "spec.timeout",
			Message: "must be positive",
			Schema:  "timeout must be positive",
		},
		{
			Name:    "health-check Job restartPolicy Always",
			Object:  HealthCheck("ceph", func(c *upgradev1.ClusterHealthCheck) { c.Spec.Template.Spec.Template.Spec.RestartPolicy = "Always" }),
			Field:   "spec.template.spec.template.spec.restartPolicy",
			Message: `a Job's Pods cannot restart "Always"`,
		},
		{
			Name:    "health-check Job without containers",
			Object:  HealthCheck("ceph", func(c *upgradev1.ClusterHealthCheck) { c.Spec.Template.Spec.Template.Spec.Containers = nil }),
			Field:   "spec.template.spec.template.spec.containers",
			Message: "at least one container is required",
		},
		{
			Name:    "health-check name that cannot form a Job name",
			Object:  HealthCheck("ceph.health"),
			Field:   "metadata.name",
			Message: `cannot form a Job name: Job names are DNS-1123 labels of lowercase letters, digits and '-', starting and ending with a letter or digit; rename it, for example to "ceph-health"`,
		},
		{
			Name:    "hook Job restartPolicy Always",
			Object:  Policy("p", hooks(hook("noout", upgradev1.HookPointPreReboot, func(h *upgradev1.ActionHook) { h.Template.Spec.Template.Spec.RestartPolicy = "Always" }))),
			Field:   "spec.hooks[0].template.spec.template.spec.restartPolicy",
			Message: `a Job's Pods cannot restart "Always"`,
		},
		{
			Name:    "hook Job without containers",
			Object:  Policy("p", hooks(hook("noout", upgradev1.HookPointPreReboot, func(h *upgradev1.ActionHook) { h.Template.Spec.Template.Spec.Containers = nil }))),
			Field:   "spec.hooks[0].template.spec.template.spec.containers",
			Message: "at least one container is required",
		},
		{
			Name:    "hook timeout zero",
			Object:  Policy("p", hooks(hook("noout", upgradev1.HookPointPreReboot, func(h *upgradev1.ActionHook) { h.Timeout = duration(0) }))),
			Field:   "spec.hooks[0].timeout",
			Message: "must be positive",
			Schema:  "timeout must be positive",
		},
		// 6. Duplicate names.
		{
			Name: "duplicate health-check names",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}, {Name: "ceph", Gate: upgradev1.HealthCheckGateFirstMachine}}
			}),
			Field:   "spec.healthChecks[1]",
			Message: "Duplicate value",
			Schema:  "Duplicate value",
		},
		{
			Name:    "duplicate hook names",
			Object:  Policy("p", hooks(hook("noout", upgradev1.HookPointPreReboot), hook("noout", upgradev1.HookPointNodeReady))),
			Field:   "spec.hooks[1]",
			Message: "Duplicate value",
			Schema:  "Duplicate value",
		},
		// 7. Malformed fields.
		{
			Name:    "malformed version",
			Object:  Policy("p", target("v1.13")),
			Field:   "spec.talosVersion",
			Message: "invalid version",
			Schema:  "should match",
		},
		{
			Name:    "Talos version the compatibility rules do not know",
			Object:  Policy("p", target("v1.99.0")),
			Field:   "spec.talosVersion",
			Message: "do not cover Talos v1.99.0",
		},
		{
			Name:    "image repository with capitals",
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "Registry.example.com/Talos/installer"})),
			Field:   "spec.installer.repository",
			Message: "is not an image repository",
		},
		{
			Name:    "image repository with a tag",
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "registry.example.com/talos/installer:v1.13.0"})),
			Field:   "spec.installer.repository",
			Message: `must not carry a tag or digest, since the target version is the tag: use "registry.example.com/talos/installer"`,
		},
		{
			Name:    "repository with source ghcr",
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR, Repository: "registry.example.com/talos/installer"})),
			Field:   "spec.installer.repository",
			Message: `applies only when source is "image"`,
		},
		{
			Name:    "short schematic ID",
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal", SchematicID: "376567988ad370138ad8"})),
			Field:   "spec.installer.schematicID",
			Message: "must be 64 lowercase hexadecimal characters",
			Schema:  "should match",
		},
		{
			Name:    "factory without platform",
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory})),
			Field:   "spec.installer",
			Message: `is required when source is "factory"`,
			Schema:  "platform is required when source is factory",
		},
		{
			Name:    "unknown installer source",
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: "docker"})),
			Field:   "spec.installer.source",
			Message: "Unsupported value",
			Schema:  "Unsupported value",
		},
		{
			Name:    "unknown hook point",
			Object:  Policy("p", hooks(hook("noout", "postReboot"))),
			Field:   "spec.hooks[0].point",
			Message: "Unsupported value",
			Schema:  "Unsupported value",
		},
		{
			Name:    "window opening at 25:00",
			Object:  Policy("p", windows(upgradev1.MaintenanceWindow{Start: "25:00", End: "04:00"})),
			Field:   "spec.maintenance.windows[0].start",
			Message: "must be a time of day",
			Schema:  "should match",
		},
		{
			Name:    "empty window",
			Object:  Policy("p", windows(upgradev1.MaintenanceWindow{Start: "02:00", End: "02:00"})),
			Field:   "spec.maintenance.windows[0].end",
			Message: "must differ from start: the window would be empty",
		},
		{
			Name:    "unknown day",
			Object:  Policy("p", windows(upgradev1.MaintenanceWindow{Start: "22:00", End: "04:00", Days: []upgradev1.Weekday{"Monday"}})),
			Field:   "spec.maintenance.windows[0].days[0]",
			Message: "Unsupported value",
			Schema:  "Unsupported value",
		},
		{
			Name: "excluded date that is not a calendar date",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{ExcludeDates: []string{"2026-02-30"}}
			}),
			Field:   "spec.maintenance.excludeDates[0]",
			Message: "must be a calendar date in the form YYYY-MM-DD",
		},
		{
			Name:    "a negative failure budget",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](-1) }),
			Field:   "spec.rollout.maxFailedClusters",
			Message: "must be at least 1",
			Schema:  "should be greater than or equal to 1",
		},
		{
			Name:    "canaries that name no Cluster",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.Canaries = &upgradev1.CanarySpec{} }),
			Field:   "spec.rollout.canaries",
			Message: "name canary Clusters in clusterNames, or give a count",
			Schema:  "name canary Clusters in clusterNames, or give a count",
		},
		{
			Name: "an unknown time zone",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{TimeZone: "Europe/Atlantis", Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "05:00"}}}
			}),
			Field:   "spec.maintenance.timeZone",
			Message: "is not an IANA time zone",
		},
		{
			Name: "the host's time zone, Local",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{TimeZone: "Local", Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "05:00"}}}
			}),
			Field:   "spec.maintenance.timeZone",
			Message: "is the zone of the host Tollgate runs on, so the windows would open at different times depending on where it runs",
		},
		{
			Name:    "maintenance that restricts nothing",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Maintenance = &upgradev1.MaintenanceSpec{} }),
			Field:   "spec.maintenance",
			Message: "restricts nothing: name the windows in which a Machine may start, or the excludeDates on which none does",
		},
		{
			Name: "maintenance with a time zone and nothing else",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Maintenance = &upgradev1.MaintenanceSpec{TimeZone: "Europe/Berlin"}
			}),
			Field:   "spec.maintenance",
			Message: "restricts nothing",
		},
		{
			Name:    "rebootTimeout under 30s",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.RebootTimeout = duration(10 * time.Second) }),
			Field:   "spec.rebootTimeout",
			Message: "must be at least 30s",
			Schema:  "rebootTimeout must be at least 30s",
		},
		{
			Name:    "unknown reboot mode",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.RebootMode = "Cold" }),
			Field:   "spec.rebootMode",
			Message: `supported values: "Default", "PowerCycle"`,
			Schema:  `supported values: "Default", "PowerCycle"`,
		},
		{
			Name:    "a bypass without a reason",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true} }),
			Field:   "spec.bypass.reason",
			Message: "say why the bypass is needed",
			Schema:  "reason is required: say why the bypass is needed",
		},
		{
			Name: "a Machine's hook bypassed on the policy",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Hooks = []upgradev1.ActionHook{hook("noout", upgradev1.HookPointPreDrain)}
				p.Spec.Bypass = &upgradev1.BypassSpec{Reason: "INC-1", Machines: []upgradev1.MachineBypass{{Machine: "c-cp-0", Hook: "noout", Action: upgradev1.HookBypassSkip}}}
			}),
			Field:   "spec.bypass.machines",
			Message: "is bypassed on the TalosUpgrade of its Cluster",
		},
		{
			Name:  "a bypass of a hook the plan does not have",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Spec.Bypass = &upgradev1.BypassSpec{Reason: "INC-1", Machines: []upgradev1.MachineBypass{{Machine: "c-cp-0", Hook: "nope", Action: upgradev1.HookBypassRetry}}}
			}),
			Field:   "spec.bypass.machines[0].hook",
			Message: "not a hook of this rollout's plan",
		},
		// 8. Two rollouts on one Cluster; a new target under a running rollout.
		{
			Name: "target changed while a rollout is in progress",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object:  Policy("p", target("v1.13.1")),
			Field:   "spec.talosVersion",
			Message: `cannot change while rollouts of this policy are in progress: TalosUpgrade "p-c" (Cluster "c")`,
		},
		{
			Name: "installer changed while a rollout is paused",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhasePaused))}),
			Object:  Policy("p", installer(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"})),
			Field:   "spec.installer",
			Message: "cannot change while rollouts of this policy are in progress",
		},
		{
			Name: "second active rollout for one Cluster",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object:  Upgrade("manual-c", "c", "p"),
			Field:   "spec.clusterName",
			Message: `Cluster "c" is already being upgraded by TalosUpgrade "p-c"`,
		},
		{
			Name: "Cluster moved to another policy while a rollout is in progress",
			World: concat([]client.Object{Policy("a"), Policy("b")}, HACluster("c", "a", "v1.12.4"),
				[]client.Object{Upgrade("a-c", "c", "a", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object:  Cluster("c", "b"),
			Field:   "metadata.labels[upgrade.tollgate.dev/policy]",
			Message: `cannot move to policy "b" while TalosUpgrade "a-c" of policy "a" is in progress on this Cluster`,
		},
		{
			Name: "Cluster moved to a policy not applied yet while a rollout is in progress",
			World: concat([]client.Object{Policy("a")}, HACluster("c", "a", "v1.12.4"),
				[]client.Object{Upgrade("a-c", "c", "a", InPhase(upgradev1.UpgradePhaseInProgress))}),
			Object:  Cluster("c", "later"),
			Field:   "metadata.labels[upgrade.tollgate.dev/policy]",
			Message: `cannot move to policy "later" while TalosUpgrade "a-c" of policy "a" is in progress on this Cluster`,
		},
		{
			Name:    "Cluster opting in to a policy its Machines cannot reach in one step",
			World:   concat([]client.Object{Policy("p")}, HACluster("old", "", "v1.10.3")),
			Object:  Cluster("old", "p"),
			Field:   "metadata.labels[upgrade.tollgate.dev/policy]",
			Message: `TalosUpgradePolicy "p" (talosVersion v1.13.0) cannot upgrade this Cluster: Cluster "old", Machines "old-cp-a", "old-cp-b", "old-cp-c" and 2 more on v1.10.3: unsupported Talos upgrade path from v1.10.3 to v1.13.0: host version 1.10.3 is too old to upgrade to Talos 1.13.0; upgrade to v1.12 first`,
		},
		{
			Name:    "user creates a TalosUpgrade its Cluster's Machines cannot take",
			World:   concat([]client.Object{Policy("p", target("v1.10.3"))}, HACluster("old", "p", "v1.10.3")),
			Object:  Upgrade("manual-old", "old", "p"),
			Field:   "spec.talosVersion",
			Message: "upgrade to v1.12 first",
		},
		// TalosUpgrades are the controller's.
		{
			Name:    "user changes the target of a TalosUpgrade",
			World:   concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object:  Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.TalosVersion = "v1.13.1" }),
			Field:   "spec.talosVersion",
			Message: `is set by the Tollgate controller from TalosUpgradePolicy "p": change the policy instead`,
		},
		{
			Name: "user undoes a cancel",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"),
				[]client.Object{Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.Cancel = true })}),
			Object:  Upgrade("p-c", "c", "p"),
			Field:   "spec.cancel",
			Message: "cannot be undone",
		},
		{
			Name:  "user admits a TalosUpgrade past maxClustersInProgress",
			World: concat([]client.Object{Policy("p")}, HACluster("c", "p", "v1.12.4"), []client.Object{Upgrade("p-c", "c", "p")}),
			Object: Upgrade("p-c", "c", "p", func(u *upgradev1.TalosUpgrade) {
				u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
			}),
			Field:   "metadata.annotations[upgrade.tollgate.dev/admitted]",
			Message: "raise spec.rollout.maxClustersInProgress on the policy instead",
		},
		// 9. A pre-release without acknowledgement.
		{
			Name:    "pre-release without allowPrerelease",
			Object:  Policy("p", target("v1.13.0-beta.1")),
			Field:   "spec.talosVersion",
			Message: "v1.13.0-beta.1 is not a stable release (it has a pre-release part or build metadata): set allowPrerelease: true to acknowledge it, or target a release such as v1.13.0",
		},
		{
			Name:    "a build with metadata without allowPrerelease",
			Object:  Policy("p", target("v1.13.0+custom.1")),
			Field:   "spec.talosVersion",
			Message: "v1.13.0+custom.1 is not a stable release",
		},
		// 10. Upgrade paths and following releases.
		{
			Name: "an Auto path through a minor that does not run the Cluster's Kubernetes",
			World: concat([]client.Object{Policy("p", target("v1.9.5"), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.AllowDowngrade = true })},
				withKubernetes("v1.35.2", HACluster("old", "p", "v1.9.5"))),
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.UpgradePath = upgradev1.UpgradePathAuto }),
			Field:   "spec.talosVersion",
			Message: "no upgrade path from v1.9.5 to v1.13.0: the hop to v1.10.0",
		},
		{
			Name:    "an upgrade path that is neither Direct nor Auto",
			Object:  Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.UpgradePath = "Fastest" }),
			Field:   "spec.upgradePath",
			Message: "Unsupported value",
			Schema:  "Unsupported value",
		},
		{
			Name: "follow and talosVersion both set",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Follow = &upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch}
			}),
			Field:   "spec.follow",
			Message: "must not be set with talosVersion",
			Schema:  "must not be set with talosVersion",
		},
		{
			Name: "target from CAPI with a version of the policy's own",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TargetFrom = upgradev1.TargetFromCAPI
			}),
			Field:   "spec.talosVersion",
			Message: "must not be set with targetFrom: CAPI",
			Schema:  "must not be set with targetFrom: CAPI",
		},
		{
			Name: "rolling reboot with no budget for the workers",
			Object: Policy("p", workers(intstr.FromInt32(0)), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Reboot.After = metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
			}),
			Field:   "spec.rollout.workers.maxUnavailable",
			Message: "must be at least 1: with 0 no worker would ever be upgraded, rebooted or reconfigured",
			Schema:  "maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%",
		},
		{
			Name: "rolling reboot with no budget for a rollout group",
			Object: Policy("p", func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Reboot.After = metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
				p.Spec.Rollout.Order = []upgradev1.RolloutGroup{{Name: "storage", Selector: selector("role", "storage"), MaxUnavailable: intOrString(intstr.FromString("0%"))}}
			}),
			Field:   "spec.rollout.order[0].maxUnavailable",
			Message: "must be at least 1%: with 0% no worker would ever be upgraded, rebooted or reconfigured",
		},
		{
			Name: "rolling reboot on a policy whose target comes from CAPI",
			Object: Policy("p", target(""), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TargetFrom = upgradev1.TargetFromCAPI
				p.Spec.Reboot.After = metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
			}),
			Field:   "spec.reboot.after",
			Message: "a rolling reboot cannot be asked for by a policy whose target comes from CAPI",
		},
		{
			Name: "target from CAPI through an Auto path",
			Object: Policy("p", target(""), func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TargetFrom = upgradev1.TargetFromCAPI
				p.Spec.UpgradePath = upgradev1.UpgradePathAuto
			}),
			Field:   "spec.upgradePath",
			Message: "must be Direct with targetFrom: CAPI",
		},
		{
			Name:    "minReleaseAge negative",
			Object:  Policy("p", following(upgradev1.FollowAllowPatch, func(f *upgradev1.FollowSpec) { f.MinReleaseAge = duration(-time.Hour) })),
			Field:   "spec.follow.minReleaseAge",
			Message: "must not be negative",
		},
		{
			Name:    "checkInterval under a minute",
			Object:  Policy("p", following(upgradev1.FollowAllowMinor, func(f *upgradev1.FollowSpec) { f.CheckInterval = duration(10 * time.Second) })),
			Field:   "spec.follow.checkInterval",
			Message: "must be at least 1m0s",
		},
		{
			Name:    "follow with allowDowngrade",
			Object:  Policy("p", following(upgradev1.FollowAllowPatch), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.AllowDowngrade = true }),
			Field:   "spec.allowDowngrade",
			Message: "must not be true with follow: it would turn off the preflight's refusal to downgrade a Cluster that runs ahead of the fleet",
		},
		{
			Name:    "follow allowing a major",
			Object:  Policy("p", following("Major")),
			Field:   "spec.follow.allow",
			Message: "Unsupported value",
			Schema:  "Unsupported value",
		},
	}, slices.Concat(UnsafeJobTemplates(), UnsafeProbes(), ChannelUnsafe())...)
}

// following makes a policy follow releases with allow instead of naming
// talosVersion.
func following(allow upgradev1.FollowAllow, mutate ...func(*upgradev1.FollowSpec)) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = ""
		p.Spec.Follow = &upgradev1.FollowSpec{Allow: allow}
		for _, m := range mutate {
			m(p.Spec.Follow)
		}
	}
}

func target(v string) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = v }
}

func kubernetes(v string) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) { p.Spec.KubernetesVersion = v }
}

func workers(mu intstr.IntOrString) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.Workers.MaxUnavailable = &mu }
}

func installer(in upgradev1.InstallerSpec) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Installer = in }
}

func hooks(h ...upgradev1.ActionHook) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Hooks = h }
}

func windows(w ...upgradev1.MaintenanceWindow) func(*upgradev1.TalosUpgradePolicy) {
	return func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Maintenance = &upgradev1.MaintenanceSpec{Windows: w} }
}

func hook(name string, point upgradev1.HookPoint, mutate ...func(*upgradev1.ActionHook)) upgradev1.ActionHook {
	h := upgradev1.ActionHook{
		Name:     name,
		Point:    point,
		Template: JobTemplate("rook-ceph", "quay.io/ceph/ceph:v19", "ceph", "osd", "set", "noout"),
	}
	for _, m := range mutate {
		m(&h)
	}
	return h
}

func selector(key, value string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
