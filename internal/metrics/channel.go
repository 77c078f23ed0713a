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

package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// The series of ReleaseChannels: promotions and analyses counted where
// they happen, and the stages' grants and the versions' phases read at
// scrape time from the manager's cache (the source of the state series).

var (
	channelEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_channel_events_total",
		Help: "Promotion events of ReleaseChannels by channel, stage (empty for a version's) and reason: VersionEntered, StageEntered, SoakStarted, AnalysisFailed, ApprovalRequested, Approved, ApprovalRejected, ApprovalExpired, StagePassed, StageFailed, VersionCompleted, VersionHalted, VersionSuperseded, VersionWithdrawn.",
	}, []string{"channel", "stage", "reason"})
	channelMeasurements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_channel_measurements_total",
		Help: "Measurements of ReleaseChannel analyses by channel, stage, kind (query or healthCheck), name and result (passed or failed); one per Cluster for a PerCluster query or a health check.",
	}, []string{"channel", "stage", "kind", "name", "result"})

	channelStageDesc = prometheus.NewDesc("tollgate_channel_stage_version",
		"The version each stage of a ReleaseChannel is granted (1), with the number of the stage's Clusters and of those on it as tollgate_channel_stage_clusters.",
		[]string{"channel", "stage", "version"}, nil)
	channelStageClustersDesc = prometheus.NewDesc("tollgate_channel_stage_clusters",
		"Clusters of a ReleaseChannel's stage: all of them (state=total) and those whose rollout completed the version the stage is granted (state=onVersion).",
		[]string{"channel", "stage", "state"}, nil)
	channelVersionDesc = prometheus.NewDesc("tollgate_channel_version_phase",
		"The versions a ReleaseChannel records, by phase (Promoting, Completed, Halted, Superseded, Withdrawn): 1 for the version's phase.",
		[]string{"channel", "version", "phase"}, nil)
)

func init() {
	ctrlmetrics.Registry.MustRegister(channelEvents, channelMeasurements, channelCollector{})
}

// ChannelEvent counts a promotion event of a channel.
func ChannelEvent(channel, stage, reason string) {
	channelEvents.WithLabelValues(channel, stage, reason).Inc()
}

// ChannelMeasurement counts a measurement of a channel's analysis.
func ChannelMeasurement(channel, stage, kind, name string, passed bool) {
	result := "failed"
	if passed {
		result = "passed"
	}
	channelMeasurements.WithLabelValues(channel, stage, kind, name, result).Inc()
}

// channelCollector reports the channels' state series from the state
// source the manager sets (SetStateSource).
type channelCollector struct{}

// Describe sends the descriptions of the channels' state series.
func (channelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- channelStageDesc
	ch <- channelStageClustersDesc
	ch <- channelVersionDesc
}

// Collect reads the channels and sends their series; a failed read leaves
// them out of this scrape.
func (channelCollector) Collect(ch chan<- prometheus.Metric) {
	state.mu.Lock()
	src := state.source
	state.mu.Unlock()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	channels := &upgradev1.ReleaseChannelList{}
	if err := src.Reader.List(ctx, channels, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Listing ReleaseChannels for the metrics")
		return
	}
	for i := range channels.Items {
		c := &channels.Items[i]
		for _, s := range c.Status.Stages {
			if s.Version != "" {
				ch <- prometheus.MustNewConstMetric(channelStageDesc, prometheus.GaugeValue, 1, c.Name, s.Name, s.Version)
			}
			ch <- prometheus.MustNewConstMetric(channelStageClustersDesc, prometheus.GaugeValue, float64(s.Clusters), c.Name, s.Name, "total")
			ch <- prometheus.MustNewConstMetric(channelStageClustersDesc, prometheus.GaugeValue, float64(s.OnVersion), c.Name, s.Name, "onVersion")
		}
		for _, v := range c.Status.Versions {
			ch <- prometheus.MustNewConstMetric(channelVersionDesc, prometheus.GaugeValue, 1, c.Name, v.Name, string(v.Phase))
		}
	}
}
