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
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPodFailureMessage(t *testing.T) {
	exited := func(name string, code int32, message string) corev1.ContainerStatus {
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}}}
	}
	sidecar := corev1.Container{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}
	tests := []struct {
		name             string
		init, containers []corev1.Container
		initStatuses     []corev1.ContainerStatus
		statuses         []corev1.ContainerStatus
		want             string
	}{
		{
			name:       "the failed container's message",
			containers: []corev1.Container{{Name: "check"}},
			statuses:   []corev1.ContainerStatus{exited("check", 1, "HEALTH_WARN")},
			want:       "HEALTH_WARN",
		},
		{
			name:       "how it ended when it left no message",
			containers: []corev1.Container{{Name: "check"}},
			statuses:   []corev1.ContainerStatus{exited("check", 3, "")},
			want:       `container "check" exited with code 3 (Error)`,
		},
		{
			name:         "a failed init container comes first",
			init:         []corev1.Container{{Name: "wait"}},
			containers:   []corev1.Container{{Name: "check"}},
			initStatuses: []corev1.ContainerStatus{exited("wait", 1, "no mons")},
			statuses:     []corev1.ContainerStatus{{Name: "check", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
			want:         "no mons",
		},
		{
			// The kubelet stops a sidecar with SIGTERM once the containers
			// ended: the container's output is the reason, not the stop.
			name:         "a sidecar stopped after the container failed comes after it",
			init:         []corev1.Container{{Name: "wait"}, sidecar},
			containers:   []corev1.Container{{Name: "check"}},
			initStatuses: []corev1.ContainerStatus{exited("wait", 0, ""), exited("proxy", 143, "")},
			statuses:     []corev1.ContainerStatus{exited("check", 1, "HEALTH_ERR")},
			want:         "HEALTH_ERR",
		},
		{
			name:         "a sidecar's failure when nothing else failed",
			init:         []corev1.Container{sidecar},
			containers:   []corev1.Container{{Name: "check"}},
			initStatuses: []corev1.ContainerStatus{exited("proxy", 137, "OOMKilled")},
			statuses:     []corev1.ContainerStatus{{Name: "check", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
			want:         "OOMKilled",
		},
		{
			name:       "the last termination of a container that restarted in place",
			containers: []corev1.Container{{Name: "check"}},
			statuses: []corev1.ContainerStatus{{
				Name:                 "check",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "noout failed"}},
			}},
			want: "noout failed",
		},
		{
			name:       "nothing failed",
			containers: []corev1.Container{{Name: "check"}},
			statuses:   []corev1.ContainerStatus{exited("check", 0, "ok")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec:   corev1.PodSpec{InitContainers: tt.init, Containers: tt.containers},
				Status: corev1.PodStatus{InitContainerStatuses: tt.initStatuses, ContainerStatuses: tt.statuses},
			}
			NewWithT(t).Expect(podFailureMessage(pod)).To(Equal(tt.want))
		})
	}
}
