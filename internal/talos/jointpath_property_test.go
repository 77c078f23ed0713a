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

package talos_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// planViolations returns every rule plan breaks for in: each state one the
// compatibility rules accept, the control plane's new Kubernetes version
// supported by the Talos version before its hop, one Talos step Talos
// supports and one Kubernetes minor per hop, nothing going down, each hop
// changing what it says and nothing else, the Talos hops those of PlanPath,
// every intermediate Kubernetes version an available one, and the targets
// last.
func planViolations(in talos.VersionsInput, plan []talos.VersionHop) []string {
	var out []string
	add := func(i int, format string, args ...any) {
		out = append(out, fmt.Sprintf("hop %d: ", i)+fmt.Sprintf(format, args...))
	}
	targetTalos, targetK8s := in.TargetTalos, in.TargetKubernetes
	if targetTalos == "" {
		targetTalos = in.Talos
	}
	if targetK8s == "" {
		targetK8s = in.Kubernetes
	}
	path, err := talos.PlanPath(talos.PathInput{From: []string{in.Talos}, Target: targetTalos, Available: in.Available})
	if err != nil {
		return []string{fmt.Sprintf("PlanPath failed where PlanVersions planned: %v", err)}
	}
	wantTalos := slices.DeleteFunc(path, func(v string) bool { return talos.SameVersion(v, in.Talos) })

	var gotTalos []string
	prevTalos, prevK8s := in.Talos, in.Kubernetes
	for i, h := range plan {
		if err := talos.CheckKubernetesSupported(h.Talos, h.Kubernetes); err != nil {
			add(i, "the state after it is unsupported: %v", err)
		}
		if err := talos.CheckUpgradeStep(prevTalos, h.Talos, false); err != nil {
			add(i, "the Talos step: %v", err)
		}
		if err := talos.CheckKubernetesStep(prevK8s, h.Kubernetes, false); err != nil {
			add(i, "the Kubernetes step: %v", err)
		}
		talosChanges, k8sChanges := !talos.SameVersion(prevTalos, h.Talos), !talos.SameVersion(prevK8s, h.Kubernetes)
		if talosChanges {
			gotTalos = append(gotTalos, h.Talos)
		}
		if k8sChanges {
			if err := talos.CheckKubernetesSupported(prevTalos, h.Kubernetes); err != nil {
				add(i, "the control plane moves first, on an unsupported combination: %v", err)
			}
			if !talos.SameVersion(h.Kubernetes, targetK8s) && !slices.Contains(in.AvailableKubernetes, h.Kubernetes) {
				add(i, "Kubernetes %s is neither the target nor available", h.Kubernetes)
			}
		}
		want := map[[2]bool]talos.VersionChange{{true, false}: talos.TalosChange, {false, true}: talos.KubernetesChange, {true, true}: talos.TalosAndKubernetesChange}[[2]bool{talosChanges, k8sChanges}]
		if h.Change != want {
			add(i, "says it changes %q, it changes %q", h.Change, want)
		}
		prevTalos, prevK8s = h.Talos, h.Kubernetes
	}
	if !talos.SameVersion(prevTalos, targetTalos) || !talos.SameVersion(prevK8s, targetK8s) {
		out = append(out, fmt.Sprintf("the plan ends on Talos %s with Kubernetes %s, not the targets", prevTalos, prevK8s))
	}
	if !slices.Equal(gotTalos, wantTalos) {
		out = append(out, fmt.Sprintf("the Talos hops are %v, PlanPath plans %v", gotTalos, wantTalos))
	}
	return out
}

// expectPlanOrRefusal checks that PlanVersions either returns a plan that
// keeps every rule or refuses with one of its documented errors.
func expectPlanOrRefusal(g Gomega, in talos.VersionsInput) ([]talos.VersionHop, error) {
	plan, err := talos.PlanVersions(in)
	if err != nil {
		g.Expect(errors.Is(err, talos.ErrNoUpgradePath) || errors.Is(err, talos.ErrUnknownVersion) || errors.Is(err, talos.ErrInvalidVersion)).
			To(BeTrue(), "undocumented error for %+v: %v", in, err)
		return nil, err
	}
	g.Expect(planViolations(in, plan)).To(BeEmpty(), "the plan %v for %+v", plan, in)
	return plan, nil
}

// TestPlanVersionsEveryCombination plans between every pair of states of
// Talos 1.9 to 1.13 and Kubernetes 1.26 to 1.37 with every release
// available: each plan keeps the rules, and a plan exists whenever both
// ends are combinations Talos supports, nothing goes down and Talos has a
// path; so the compatibility rules of this build leave nothing unbridged.
func TestPlanVersionsEveryCombination(t *testing.T) {
	g := NewWithT(t)
	var available, availableK8s []string
	for minor := 8; minor <= 13; minor++ {
		available = append(available, fmt.Sprintf("v1.%d.0", minor), fmt.Sprintf("v1.%d.4", minor))
	}
	for minor := 26; minor <= 37; minor++ {
		availableK8s = append(availableK8s, fmt.Sprintf("v1.%d.3", minor))
	}
	plans, combined := 0, 0
	for from := 9; from <= 13; from++ {
		for to := from; to <= 13; to++ {
			for k8sFrom := 26; k8sFrom <= 37; k8sFrom++ {
				for k8sTo := 26; k8sTo <= 37; k8sTo++ {
					in := talos.VersionsInput{
						Talos: fmt.Sprintf("v1.%d.0", from), Kubernetes: fmt.Sprintf("v1.%d.1", k8sFrom),
						TargetTalos: fmt.Sprintf("v1.%d.4", to), TargetKubernetes: fmt.Sprintf("v1.%d.3", k8sTo),
						Available: available, AvailableKubernetes: availableK8s,
					}
					plan, err := expectPlanOrRefusal(g, in)
					bridgeable := k8sTo >= k8sFrom &&
						talos.CheckKubernetesSupported(in.Talos, in.Kubernetes) == nil &&
						talos.CheckKubernetesSupported(in.TargetTalos, in.TargetKubernetes) == nil
					g.Expect(err == nil).To(Equal(bridgeable), "%+v: %v", in, err)
					if err == nil {
						plans++
						for _, h := range plan {
							if h.Change == talos.TalosAndKubernetesChange {
								combined++
							}
						}
					}
				}
			}
		}
	}
	g.Expect(plans).To(BeNumerically(">", 100))
	g.Expect(combined).To(BeNumerically(">", 100))
}

// TestPlanVersionsRandomReleases plans with random patches and random
// releases missing, from a fixed seed; FuzzPlanVersions explores further.
func TestPlanVersionsRandomReleases(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(26, 2026))
	for range 2000 {
		b := make([]byte, 10)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		_, _ = expectPlanOrRefusal(g, fuzzInput(b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], uint16(b[8])<<8|uint16(b[9]), b[9]))
	}
}

// fuzzInput maps fuzzer bytes to a VersionsInput over Talos 1.8 to 1.14 and
// Kubernetes 1.26 to 1.38, the releases of each minor present or not by a
// bit of talosMask and k8sMask.
func fuzzInput(talosMinor, talosPatch, k8sMinor, k8sPatch, toMinor, toPatch, k8sToMinor, k8sToPatch uint8, k8sMask uint16, talosMask uint8) talos.VersionsInput {
	in := talos.VersionsInput{
		Talos:      fmt.Sprintf("v1.%d.%d", 8+talosMinor%7, talosPatch%5),
		Kubernetes: fmt.Sprintf("v1.%d.%d", 26+k8sMinor%13, k8sPatch%5),
	}
	if toMinor%8 != 7 {
		in.TargetTalos = fmt.Sprintf("v1.%d.%d", 8+toMinor%8, toPatch%5)
	}
	if k8sToMinor%14 != 13 {
		in.TargetKubernetes = fmt.Sprintf("v1.%d.%d", 26+k8sToMinor%14, k8sToPatch%5)
	}
	for minor := range 7 {
		if talosMask&(1<<minor) != 0 {
			in.Available = append(in.Available, fmt.Sprintf("v1.%d.3", 8+minor))
		}
	}
	if in.TargetTalos != "" {
		in.Available = append(in.Available, in.TargetTalos)
	}
	for minor := range 13 {
		if k8sMask&(1<<minor) != 0 {
			in.AvailableKubernetes = append(in.AvailableKubernetes, fmt.Sprintf("v1.%d.2", 26+minor), fmt.Sprintf("v1.%d.1-rc.0", 26+minor))
		}
	}
	return in
}

func FuzzPlanVersions(f *testing.F) {
	f.Add(uint8(3), uint8(5), uint8(8), uint8(2), uint8(5), uint8(1), uint8(10), uint8(0), uint16(0xffff), uint8(0xff))
	f.Add(uint8(2), uint8(6), uint8(7), uint8(0), uint8(5), uint8(1), uint8(9), uint8(3), uint16(0x0200), uint8(0x10))
	f.Add(uint8(5), uint8(0), uint8(9), uint8(1), uint8(7), uint8(0), uint8(13), uint8(0), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, talosMinor, talosPatch, k8sMinor, k8sPatch, toMinor, toPatch, k8sToMinor, k8sToPatch uint8, k8sMask uint16, talosMask uint8) {
		g := NewWithT(t)
		_, _ = expectPlanOrRefusal(g, fuzzInput(talosMinor, talosPatch, k8sMinor, k8sPatch, toMinor, toPatch, k8sToMinor, k8sToPatch, k8sMask, talosMask))
	})
}
