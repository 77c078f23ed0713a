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

package channel

import (
	"fmt"
	"slices"
	"strings"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Graph is the order of a channel's stages: each stage's predecessors, and
// the stages in an order where every stage comes after its predecessors.
type Graph struct {
	// Order lists the stages so that each comes after its predecessors;
	// among stages free to come next, in the order of spec.stages.
	Order []string
	// After are the predecessors of each stage: its after, or the stage
	// before it in spec.stages when after is empty; none for the first.
	After map[string][]string
	// Next are the successors of each stage.
	Next map[string][]string
}

// Predecessors returns the stages a stage comes after: its after, or the
// stage before it in stages when after is empty; none for the first stage.
func Predecessors(stages []upgradev1.ChannelStage, i int) []string {
	if len(stages[i].After) > 0 {
		return stages[i].After
	}
	if i == 0 {
		return nil
	}
	return []string{stages[i-1].Name}
}

// CycleError is the error of stages whose order has a cycle.
type CycleError struct {
	// Cycle is the cycle, its first stage last again: a, b, a.
	Cycle []string
}

func (e *CycleError) Error() string {
	return "the order of the stages has a cycle: " + strings.Join(e.Cycle, " → ")
}

// UnknownStageError is the error of an after that names no stage.
type UnknownStageError struct {
	// Stage names the stage whose after is wrong, After the name in it.
	Stage, After string
}

func (e *UnknownStageError) Error() string {
	return fmt.Sprintf("stage %q comes after %q, which is not a stage of the channel", e.Stage, e.After)
}

// NewGraph orders the stages. It fails with an *UnknownStageError when an
// after names no stage (or the stage itself), and with a *CycleError when
// the order has a cycle.
func NewGraph(stages []upgradev1.ChannelStage) (Graph, error) {
	g := Graph{After: map[string][]string{}, Next: map[string][]string{}}
	known := map[string]bool{}
	for _, s := range stages {
		known[s.Name] = true
	}
	for i, s := range stages {
		for _, p := range Predecessors(stages, i) {
			if !known[p] || p == s.Name {
				return Graph{}, &UnknownStageError{Stage: s.Name, After: p}
			}
			g.After[s.Name] = append(g.After[s.Name], p)
			g.Next[p] = append(g.Next[p], s.Name)
		}
	}
	// Kahn's algorithm, taking the free stages in the order of spec.stages.
	placed := map[string]bool{}
	for len(g.Order) < len(stages) {
		progressed := false
		for _, s := range stages {
			if placed[s.Name] || !allPlaced(g.After[s.Name], placed) {
				continue
			}
			placed[s.Name] = true
			g.Order = append(g.Order, s.Name)
			progressed = true
		}
		if !progressed {
			return Graph{}, &CycleError{Cycle: findCycle(stages, g.After, placed)}
		}
	}
	return g, nil
}

func allPlaced(names []string, placed map[string]bool) bool {
	for _, n := range names {
		if !placed[n] {
			return false
		}
	}
	return true
}

// findCycle returns a cycle among the stages not placed: walking back from
// any of them along predecessors not placed must come back to a stage seen.
func findCycle(stages []upgradev1.ChannelStage, after map[string][]string, placed map[string]bool) []string {
	var start string
	for _, s := range stages {
		if !placed[s.Name] {
			start = s.Name
			break
		}
	}
	path := []string{start}
	for {
		cur := path[len(path)-1]
		var prev string
		for _, p := range after[cur] {
			if !placed[p] {
				prev = p
				break
			}
		}
		if i := slices.Index(path, prev); i >= 0 {
			cycle := slices.Clone(path[i:])
			slices.Reverse(cycle)
			return append(cycle, cycle[0])
		}
		path = append(path, prev)
	}
}

// Roots are the stages that come after none: the first stage.
func (g Graph) Roots() []string {
	var roots []string
	for _, s := range g.Order {
		if len(g.After[s]) == 0 {
			roots = append(roots, s)
		}
	}
	return roots
}

// Layers groups the stages by depth, for drawing the pipeline: the roots,
// then the stages whose predecessors are all in earlier layers, and so on.
func (g Graph) Layers() [][]string {
	depth := map[string]int{}
	var layers [][]string
	for _, s := range g.Order {
		d := 0
		for _, p := range g.After[s] {
			d = max(d, depth[p]+1)
		}
		depth[s] = d
		for len(layers) <= d {
			layers = append(layers, nil)
		}
		layers[d] = append(layers[d], s)
	}
	return layers
}
