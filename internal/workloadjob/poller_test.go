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

package workloadjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

func TestPoller(t *testing.T) {
	g := NewWithT(t)
	cached, uncached := fake.NewClientBuilder().Build(), fake.NewClientBuilder().Build()

	p := &workloadjob.Poller{Client: cached}
	g.Expect(p.PodReader()).To(BeIdenticalTo(cached))
	g.Expect(p.NextPoll(time.Hour)).To(Equal(workloadjob.DefaultPollInterval))
	g.Expect(p.NextPoll(time.Second)).To(Equal(time.Second), "the deadline comes first")
	g.Expect(p.Time()).To(BeTemporally("~", time.Now(), time.Minute))

	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	p = &workloadjob.Poller{Client: cached, APIReader: uncached, Now: func() time.Time { return at }, PollInterval: 2 * time.Second}
	g.Expect(p.PodReader()).To(BeIdenticalTo(uncached))
	g.Expect(p.NextPoll(time.Hour)).To(Equal(2 * time.Second))
	g.Expect(p.Time()).To(Equal(at))
}
