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

package workloadjob

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

func TestName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		name   string
		parts  []string
		want   string
		hashed bool
	}{
		{name: "short valid parts are kept", parts: []string{"tollgate", "ceph", "c1"}, want: "tollgate-ceph-c1"},
		{name: "dots are not label characters", parts: []string{"tollgate", "ceph.health", "c1"}, hashed: true},
		{name: "upper case is lowered", parts: []string{"tollgate", "preDrain"}, hashed: true},
		{name: "too long is truncated", parts: []string{"tollgate", long, "c1"}, hashed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Name(tt.parts...)
			g.Expect(validation.IsDNS1123Label(got)).To(BeEmpty())
			g.Expect(Name(tt.parts...)).To(Equal(got), "stable")
			if !tt.hashed {
				g.Expect(got).To(Equal(tt.want))
				return
			}
			g.Expect(got).To(MatchRegexp(`-[0-9a-f]{8}$`))
		})
	}

	g := NewWithT(t)
	g.Expect(Name("tollgate", long+"x", "c1")).NotTo(Equal(Name("tollgate", long+"y", "c1")), "the hash keeps truncated names apart")
	g.Expect(Name("a-b", "c")).NotTo(Equal(HashedName("a", "b-c")))
	g.Expect(LabelValue("ok")).To(Equal("ok"))
	g.Expect(validation.IsValidLabelValue(LabelValue(long + ".x"))).To(BeEmpty())
}

func TestBuild(t *testing.T) {
	g := NewWithT(t)
	tmpl := &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "storage", ManagedByLabel: "me"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{
				{Name: "check", Image: "ceph", Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "TOLLGATE_HOOK", Value: "mine"}}},
				{Name: "keep", Image: "ceph", TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			},
		}}},
	}
	job := Build(Spec{
		Name:            "tollgate-ceph-c1",
		Template:        tmpl,
		Labels:          map[string]string{ManagedByLabel: ManagedByValue},
		Annotations:     map[string]string{RunAnnotation: "1"},
		UserLabels:      map[string]string{"extra": "yes"},
		UserAnnotations: map[string]string{"note": "n"},
		Env:             []corev1.EnvVar{{Name: "TOLLGATE_HOOK", Value: "preDrain"}},
	})
	g.Expect(job.Name).To(Equal("tollgate-ceph-c1"))
	g.Expect(job.Namespace).To(Equal("default"))
	g.Expect(job.Labels).To(Equal(map[string]string{"team": "storage", "extra": "yes", ManagedByLabel: ManagedByValue}))
	g.Expect(job.Annotations).To(Equal(map[string]string{"note": "n", RunAnnotation: "1"}))
	g.Expect(job.Spec.BackoffLimit).To(Equal(ptr.To[int32](0)))
	pod := job.Spec.Template
	g.Expect(pod.Labels).To(Equal(map[string]string{"extra": "yes", ManagedByLabel: ManagedByValue}))
	g.Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(pod.Spec.InitContainers[0].TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
	g.Expect(pod.Spec.InitContainers[0].Env).To(ConsistOf(corev1.EnvVar{Name: "TOLLGATE_HOOK", Value: "preDrain"}))
	g.Expect(pod.Spec.Containers[0].TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
	g.Expect(pod.Spec.Containers[0].Env).To(Equal([]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "TOLLGATE_HOOK", Value: "preDrain"}}))
	g.Expect(pod.Spec.Containers[1].TerminationMessagePolicy).To(Equal(corev1.TerminationMessageReadFile), "the user's policy is kept")
	g.Expect(tmpl.Spec.Template.Spec.Containers[0].Env).To(HaveLen(2), "the template is not modified")
	g.Expect(tmpl.Spec.BackoffLimit).To(BeNil())

	tmpl.Namespace = "rook-ceph"
	tmpl.Spec.BackoffLimit = ptr.To[int32](3)
	job = Build(Spec{Name: "x", Template: tmpl})
	g.Expect(job.Namespace).To(Equal("rook-ceph"))
	g.Expect(job.Spec.BackoffLimit).To(Equal(ptr.To[int32](3)), "the user's backoffLimit is kept")
}

func TestTruncateMessage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "trimmed", in: "  ceph is HEALTH_WARN\n", want: "ceph is HEALTH_WARN"},
		{name: "lines joined", in: "line 1\n\nline 2\r\n", want: "line 1 | line 2"},
		{name: "256 characters are kept whole", in: strings.Repeat("é", 256), want: strings.Repeat("é", 256)},
		{
			// A check writes its verdict last: the end is kept, after a
			// marker, in 256 characters of several bytes each.
			name: "end kept", in: strings.Repeat("é", 300) + "\nverdict: HEALTH_ERR",
			want: "…" + strings.Repeat("é", 255-len(" | verdict: HEALTH_ERR")) + " | verdict: HEALTH_ERR",
		},
		{
			name: "lines joined before the cut", in: strings.Repeat("osd.1 is down\n", 40) + "HEALTH_ERR: 40 osds down\n",
			want: "…" + strings.Repeat("osd.1 is down | ", 40)[640-(255-len("HEALTH_ERR: 40 osds down")):] + "HEALTH_ERR: 40 osds down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := TruncateMessage(tt.in)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(utf8.ValidString(got)).To(BeTrue())
			g.Expect(utf8.RuneCountInString(got)).To(BeNumerically("<=", MaxMessageLength))
		})
	}
}

func TestAttempts(t *testing.T) {
	tests := []struct {
		name              string
		failed, succeeded int32
		want              int32
	}{
		{name: "running, no Pod ended", want: 0},
		{name: "passed at once", succeeded: 1, want: 1},
		{name: "failed once, then passed on the Job controller's retry", failed: 1, succeeded: 1, want: 2},
		{name: "failed three times, then passed", failed: 3, succeeded: 1, want: 4},
		{name: "failed past its backoffLimit", failed: 2, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &batchv1.Job{Status: batchv1.JobStatus{Failed: tt.failed, Succeeded: tt.succeeded}}
			NewWithT(t).Expect(Attempts(job)).To(Equal(tt.want))
		})
	}
}

func TestOutcomeOf(t *testing.T) {
	cond := func(typ batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue}
	}
	tests := []struct {
		name       string
		conditions []batchv1.JobCondition
		want       Outcome
	}{
		{name: "no condition", want: Running},
		{name: "success criteria met is not yet complete", conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet)}, want: Running},
		{name: "failure target is not yet failed", conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget)}, want: Running},
		{name: "complete", conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}, want: Succeeded},
		{name: "failed", conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}, want: Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &batchv1.Job{Status: batchv1.JobStatus{Conditions: tt.conditions}}
			NewWithT(t).Expect(OutcomeOf(job)).To(Equal(tt.want))
		})
	}
}
