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

package talosimage

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
)

// VersionAnnotation is the annotation, in the metadata of an InfraMachine
// template (its own, not spec.template.metadata), that says which Talos
// version the template's image boots, for an image whose value does not
// say it: an AMI ID, a VM template ID.
const VersionAnnotation = "upgrade.tollgate.dev/talos-version"

// Source says what a Talos version was read from.
type Source string

const (
	// SourceInstaller is an installer image whose tag is the version.
	SourceInstaller Source = "InstallerTag"
	// SourceURL is an Image Factory disk image URL, or another URL that
	// names Talos and has the version as a path segment.
	SourceURL Source = "URL"
	// SourceName is a name that carries "talos" and the version.
	SourceName Source = "Name"
	// SourceAnnotation is VersionAnnotation on the template.
	SourceAnnotation Source = "Annotation"
)

var (
	// ErrUnknownKind is returned for an InfraMachine kind whose image field
	// is not known (Kinds), when its template declares no version either.
	ErrUnknownKind = errors.New("unknown kind of InfraMachine")
	// ErrNoVersion is returned when the image names no Talos version and
	// the template declares none.
	ErrNoVersion = errors.New("no Talos version")
	// ErrConflict is returned when the image and the template's annotation
	// name different versions.
	ErrConflict = errors.New("conflicting Talos versions")
)

// Image is what a machine boots, as read.
type Image struct {
	// Field is the path of the image field (for example "spec.ami", or
	// "spec.template.spec.ami" of a template). "" when the version came
	// from the annotation of a kind whose field is not known.
	Field string
	// Value is the field's value as written; for a structured field, its
	// strings joined with ", ".
	Value string
	// Version is the Talos version, canonical ("v1.13.0").
	Version string
	// Source says what Version was read from.
	Source Source
	// Schematic is the Image Factory schematic the image names, "" when it
	// names none.
	Schematic string
	// Installer is the value when it is an installer image (SourceInstaller),
	// which Tollgate may install as is; "" otherwise.
	Installer string
}

// Read returns what an InfraMachine (a JSON map with its apiVersion and
// kind) boots. declared is the version its template declares
// (Declared), "" when none.
func Read(obj map[string]any, declared string) (Image, error) {
	return read(obj, []string{"spec"}, declared)
}

// ReadTemplate returns what the InfraMachines of a template (a JSON map)
// boot, with the version the template declares in its own metadata.
func ReadTemplate(template map[string]any) (Image, error) {
	return read(template, []string{"spec", "template", "spec"}, Declared(template))
}

// Declared returns the version a template declares (VersionAnnotation), ""
// when none.
func Declared(template map[string]any) string {
	annotations, _ := lookup(template, []string{"metadata", "annotations"})
	m, _ := annotations.(map[string]any)
	v, _ := m[VersionAnnotation].(string)

	return strings.TrimSpace(v)
}

// read reads the image of obj below base.
func read(obj map[string]any, base []string, declared string) (Image, error) {
	kind, _ := obj["kind"].(string)
	kind = strings.TrimSuffix(kind, "Template")
	group := groupOf(obj)

	var want string
	if declared != "" {
		v, err := canonical(declared)
		if err != nil {
			return Image{}, fmt.Errorf("annotation %s %q is not a Talos version: %w; write one such as v1.13.0", VersionAnnotation, declared, err)
		}

		want = v
	}

	k, known := KindOf(group, kind)
	if !known {
		if want != "" {
			return Image{Version: want, Source: SourceAnnotation}, nil
		}

		return Image{}, fmt.Errorf("%w %s: Tollgate does not know which field of it names the image; write the Talos version its template boots in the template's annotation %s", ErrUnknownKind, kind, VersionAnnotation)
	}

	img, found := k.image(obj, base)
	if !found {
		if want != "" {
			return Image{Version: want, Source: SourceAnnotation}, nil
		}

		return Image{}, fmt.Errorf("%w: %s has no %s", ErrNoVersion, kind, k.fieldNames(base))
	}

	version, schematic, source, ok, err := parseAll(img.values)
	switch {
	case err != nil:
		return Image{}, fmt.Errorf("%s %s: %w", kind, img.field, err)
	case !ok && want == "":
		return Image{}, fmt.Errorf("%w: %s %s %q names no Talos version (an opaque image); write the version its template boots in the template's annotation %s",
			ErrNoVersion, kind, img.field, img.value(), VersionAnnotation)
	case !ok:
		return Image{Field: img.field, Value: img.value(), Version: want, Source: SourceAnnotation}, nil
	case want != "" && want != version:
		return Image{}, fmt.Errorf("%w: %s %s %q boots %s, the template's annotation %s says %s", ErrConflict, kind, img.field, img.value(), version, VersionAnnotation, want)
	}

	out := Image{Field: img.field, Value: img.value(), Version: version, Source: source, Schematic: schematic}
	if source == SourceInstaller {
		out.Installer = img.value()
	}

	return out, nil
}

// parseAll reads a version from each of values; every one that names a
// version must name the same.
func parseAll(values []string) (version, schematic string, source Source, ok bool, err error) {
	for _, v := range values {
		ver, sch, src, found := ParseValue(v)
		if !found {
			continue
		}

		if ok && ver != version {
			return "", "", "", false, fmt.Errorf("%w: %q and another value name %s and %s", ErrConflict, v, version, ver)
		}

		if !ok {
			version, schematic, source, ok = ver, sch, src, true
		}
	}

	return version, schematic, source, ok, nil
}

var (
	schematicPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// namePattern finds a version after "talos" in a name: dotted, or
	// dashed where dots are not allowed (GCP image names).
	namePattern = regexp.MustCompile(`(?i)talos[-_/.]?v?(\d+)[.-](\d+)[.-](\d+)(?:[.-]((?:alpha|beta|rc)[.-]?\d+))?(?:$|[^0-9])`)
)

// ParseValue reads the Talos version one value of an image field names: an
// installer image's tag, an Image Factory (or other Talos) URL, or a name
// that carries "talos" and the version. ok is false for a value that names
// none (an opaque ID). schematic is the Image Factory schematic it names.
func ParseValue(value string) (version, schematic string, source Source, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return "", "", "", false
	}

	if u, err := url.Parse(value); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		if version, schematic, ok = parseURL(u); ok {
			return version, schematic, SourceURL, true
		}

		return "", "", "", false
	}

	if version, schematic, ok = parseInstaller(value); ok {
		return version, schematic, SourceInstaller, true
	}

	if m := namePattern.FindStringSubmatch(value); m != nil {
		v := m[1] + "." + m[2] + "." + m[3]
		if m[4] != "" {
			pre := strings.NewReplacer("-", ".").Replace(strings.ToLower(m[4]))
			if !strings.Contains(pre, ".") {
				pre = strings.TrimRight(pre, "0123456789") + "." + strings.TrimLeft(pre, "abcdefghijklmnopqrstuvwxyz")
			}

			v += "-" + pre
		}

		if version, err := canonical(v); err == nil {
			return version, "", SourceName, true
		}
	}

	return "", "", "", false
}

// parseURL reads an Image Factory disk image URL
// (/image/<schematic>/<version>/<file>, /pxe/... on pxe.factory.talos.dev)
// or a URL that names Talos and has exactly one path segment that is a
// version.
func parseURL(u *url.URL) (version, schematic string, ok bool) {
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(path) >= 3 && (path[0] == "image" || path[0] == "pxe") && schematicPattern.MatchString(path[1]) {
		if v, err := canonical(path[2]); err == nil {
			return v, path[1], true
		}

		return "", "", false
	}

	if !strings.Contains(strings.ToLower(u.Host+u.Path), "talos") {
		return "", "", false
	}

	for _, segment := range path {
		if !strings.HasPrefix(segment, "v") {
			continue
		}

		v, err := canonical(segment)
		if err != nil {
			continue
		}

		if ok && v != version {
			return "", "", false
		}

		version, ok = v, true
	}

	return version, "", ok
}

// parseInstaller reads an installer image reference whose tag is a Talos
// version (fully specified: registry, repository and tag); an Image Factory
// installer (<registry>/<kind>/<schematic>:<version>) names its schematic.
func parseInstaller(value string) (version, schematic string, ok bool) {
	if strings.Contains(value, "@") {
		return "", "", false // By digest: what it installs is not known before it runs.
	}

	tag, err := name.NewTag(value, name.StrictValidation)
	if err != nil {
		return "", "", false
	}

	version, err = canonical(tag.TagStr())
	if err != nil {
		return "", "", false
	}

	repo := strings.Split(tag.RepositoryStr(), "/")
	if last := repo[len(repo)-1]; len(repo) >= 2 && schematicPattern.MatchString(last) {
		schematic = last
	}

	return version, schematic, true
}

// canonical returns v as Talos writes versions: "v" and MAJOR.MINOR.PATCH,
// with its pre-release.
func canonical(v string) (string, error) {
	parsed, err := semver.StrictNewVersion(strings.TrimPrefix(strings.TrimSpace(v), "v"))
	if err != nil {
		return "", fmt.Errorf("%q is not MAJOR.MINOR.PATCH: %w", v, err)
	}

	return "v" + parsed.String(), nil
}

// groupOf returns the API group of an object's apiVersion.
func groupOf(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}

	return group
}

// lookup returns the value at path of obj.
func lookup(obj map[string]any, path []string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}

		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}

	return cur, true
}
