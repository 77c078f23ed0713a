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
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Documentation returns the DocumentationExamples of the README and of every
// page of the book (docs/book/src) of the repository at root.
func Documentation(root string) ([]Case, error) {
	paths := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs", "book", "src"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing the pages of the book: %w", err)
	}
	var cases []Case
	for _, path := range paths {
		c, err := DocumentationExamples(path)
		if err != nil {
			return nil, err
		}
		cases = append(cases, c...)
	}
	return cases, nil
}

// yamlBlock is a fenced YAML block of a Markdown file.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// DocumentationExamples returns one valid case per Tollgate object and CAPI
// Cluster in the YAML blocks of a Markdown file, such as the README: what the
// documentation shows must be admitted. A Cluster's case has the policies of
// its block as World; every object is moved to Namespace.
func DocumentationExamples(path string) ([]Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the examples of %s: %w", path, err)
	}
	var cases []Case
	for i, block := range yamlBlock.FindAllSubmatch(raw, -1) {
		var policies []client.Object
		for j, doc := range strings.Split(string(block[1]), "\n---\n") {
			obj, err := decode([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s, YAML block %d, document %d: %w", path, i+1, j+1, err)
			}
			if obj == nil {
				continue
			}
			if _, global := obj.(*upgradev1.ReleaseChannel); !global {
				obj.SetNamespace(Namespace)
			}
			name := fmt.Sprintf("%s example %d.%d: %s %s", filepath.Base(path), i+1, j+1, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
			if c, ok := obj.(*clusterv1.Cluster); ok {
				if c.Spec.ControlPlaneRef.Name == "" {
					// The documentation elides the spec, which is CAPI's business.
					c.Spec = Cluster(c.Name, "").Spec
				}
				cases = append(cases, Case{Name: name, World: policies, Object: obj})
				continue
			}
			if _, ok := obj.(*upgradev1.TalosUpgradePolicy); ok {
				policies = append(policies, obj)
			}
			cases = append(cases, Case{Name: name, Object: obj})
		}
	}
	return cases, nil
}

// decode returns the object of a YAML document, or nil for a kind the
// webhooks do not serve.
func decode(doc []byte) (client.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	var obj client.Object
	switch tm.Kind {
	case "TalosUpgradePolicy":
		obj = &upgradev1.TalosUpgradePolicy{}
	case "ClusterHealthCheck":
		obj = &upgradev1.ClusterHealthCheck{}
	case "TalosUpgrade":
		obj = &upgradev1.TalosUpgrade{}
	case "ReleaseChannel":
		obj = &upgradev1.ReleaseChannel{}
	case "Cluster":
		obj = &clusterv1.Cluster{}
	default:
		return nil, nil
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	return obj, nil
}
