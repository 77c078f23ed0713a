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

package machineconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
)

var (
	// ErrInvalidConfig is wrapped by the errors about a machine
	// configuration that does not load, or does not validate, as Talos
	// machine configuration.
	ErrInvalidConfig = errors.New("invalid Talos machine configuration")
	// ErrNotIdempotent is wrapped by the error of Desired for patches that
	// change a configuration they were already applied to (a JSON patch
	// that removes or inserts at a list index, say): applied to a running
	// node, they would change it again at every pass.
	ErrNotIdempotent = errors.New("machine configuration patches are not idempotent")
)

// Desired returns the machine configuration a node running running should
// run once p applies: p applied to running as CABPT applies a
// TalosConfig's patches when it renders a configuration (configPatches as
// one JSON patch with configpatcher.JSON6902, then each of strategicPatches
// loaded with configpatcher.LoadPatch and applied with configpatcher.Apply),
// encoded without comments, with no list item repeated.
//
// CABPT applies the patches to a configuration it has just generated; the
// node's running one already has the patches it was made with. Desired
// therefore only adds what patches say, and a patch must give the same
// result when applied twice:
//
//   - Talos' strategic merge appends list items (machine.certSANs,
//     kubelet.extraMounts, files, ...): applied again, a patch repeats them.
//     An item repeated exactly carries no meaning in a machine
//     configuration, so Desired keeps the first of each.
//   - Patches whose second application changes the configuration again
//     (a JSON patch that removes a list item by index, inserts at an index
//     other than the end, or tests a value it then replaces) are refused
//     with ErrNotIdempotent, naming the patch: write them as a strategic
//     merge patch, or replace the whole list.
//   - What a former patch set and the current ones no longer set stays on
//     the node: neither Tollgate nor Talos keeps the configuration the
//     patches were first applied to. To take something away, say so in a
//     patch ($patch: delete, or a JSON patch remove).
//
// The running configuration must load (ErrInvalidConfig otherwise), and the
// patches must apply to it (ErrMalformedPatches otherwise, naming the
// patch). The result is not validated: CheckInPlace does that.
func Desired(running []byte, p Patches) ([]byte, error) {
	base, err := canonical(running)
	if err != nil {
		return nil, fmt.Errorf("%w: the running configuration: %s", ErrInvalidConfig, scrub(err, running))
	}
	units, err := loadUnits(p)
	if err != nil {
		return nil, err
	}
	desired, err := applyUnits(base, units, p)
	if err != nil {
		return nil, err
	}
	again, err := applyUnits(desired, units, p)
	if err != nil || !bytes.Equal(again, desired) {
		return nil, notIdempotent(desired, units, p)
	}
	return desired, nil
}

// Converged reports whether a node running running already runs what p
// says: whether Desired changes nothing in it. Both are compared as Talos
// reads them (loaded with configloader and encoded without comments, no
// list item repeated), so formatting, comments and the order of keys do
// not count. Its errors are those of Desired.
func Converged(running []byte, p Patches) (bool, error) {
	desired, err := Desired(running, p)
	if err != nil {
		return false, err
	}
	base, err := canonical(running)
	if err != nil {
		return false, fmt.Errorf("%w: the running configuration: %s", ErrInvalidConfig, scrub(err, running))
	}
	return bytes.Equal(base, desired), nil
}

// unit is one step of the patching: spec.configPatches as one JSON patch,
// or one of spec.strategicPatches.
type unit struct {
	// field names the patch in errors, for example "strategicPatches[1]".
	field string
	// patch is the patch as configpatcher loaded it.
	patch configpatcher.Patch
	// raw is the patch's text, whose values errors must not show.
	raw []byte
}

// loadUnits loads the patches of p in CABPT's order.
func loadUnits(p Patches) ([]unit, error) {
	units := make([]unit, 0, 1+len(p.StrategicPatches))
	if len(p.ConfigPatches) > 0 {
		ops := make([]map[string]any, 0, len(p.ConfigPatches))
		for _, op := range p.ConfigPatches {
			value := op.Value
			if len(value) == 0 {
				value = json.RawMessage("null")
			}
			ops = append(ops, map[string]any{"op": op.Op, "path": op.Path, "value": value})
		}
		raw, err := json.Marshal(ops)
		if err != nil {
			return nil, fmt.Errorf("%w: %s configPatches: not representable as a JSON patch", ErrMalformedPatches, p.Source)
		}
		patch, err := configpatcher.LoadPatch(raw)
		if _, strategic := patch.(configpatcher.StrategicMergePatch); err != nil || strategic {
			return nil, fmt.Errorf("%w: %s configPatches: not a JSON patch: %s", ErrMalformedPatches, p.Source, scrub(err, raw))
		}
		units = append(units, unit{field: "configPatches", patch: patch, raw: raw})
	}
	for i, s := range p.StrategicPatches {
		patch, err := loadStrategic(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s strategicPatches[%d]: %w", ErrMalformedPatches, p.Source, i, err)
		}
		units = append(units, unit{field: fmt.Sprintf("strategicPatches[%d]", i), patch: patch, raw: []byte(s)})
	}
	return units, nil
}

// applyUnits applies units to the canonical configuration base, one at a
// time so that an error names its patch, and returns the result in
// canonical form.
func applyUnits(base []byte, units []unit, p Patches) ([]byte, error) {
	if len(units) == 0 {
		return base, nil
	}
	in := configpatcher.WithBytes(base)
	for _, u := range units {
		out, err := configpatcher.Apply(in, []configpatcher.Patch{u.patch})
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s does not apply to the node's configuration: %s%s", ErrMalformedPatches, p.Source, u.field, scrub(err, base, u.raw), hint(err))
		}
		in = out
	}
	cfg, err := in.Config()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the patched configuration does not load: %s", ErrMalformedPatches, p.Source, scrub(err, base, rawOf(units)))
	}
	out, err := encode(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the patched configuration: %s", ErrMalformedPatches, p.Source, scrub(err, base, rawOf(units)))
	}
	return out, nil
}

// notIdempotent returns the ErrNotIdempotent error of patches that change
// desired, the configuration they made: it names the first patch that does
// so alone, or all of them.
func notIdempotent(desired []byte, units []unit, p Patches) error {
	for _, u := range units {
		once, err := applyUnits(desired, []unit{u}, p)
		if err != nil {
			return fmt.Errorf("%w: %s %s does not apply again to the configuration it made (%s): a patch a node already runs must leave its configuration as it is; write it as a strategic merge patch that sets values",
				ErrNotIdempotent, p.Source, u.field, err.Error())
		}
		twice, err := applyUnits(once, []unit{u}, p)
		if err != nil || !bytes.Equal(once, twice) {
			return fmt.Errorf("%w: %s %s changes the configuration again each time it applies (a list item removed or inserted by index, or a whole document deleted, say): write it as a strategic merge patch that sets values, or replace the whole list",
				ErrNotIdempotent, p.Source, u.field)
		}
	}
	return fmt.Errorf("%w: %s: applied again, the patches together change the configuration they made: make each one set a value rather than change it",
		ErrNotIdempotent, p.Source)
}

// hint says what to do about a patch error Talos' message does not
// explain.
func hint(err error) string {
	if strings.Contains(err.Error(), "multi-document") {
		return " (Talos 1.12 and later generate machine configurations of several documents, which JSON patches cannot patch: write the patch as a strategic merge patch)"
	}
	return ""
}

// rawOf returns the text of units, for scrub.
func rawOf(units []unit) []byte {
	var all []byte
	for _, u := range units {
		all = append(all, u.raw...)
		all = append(all, '\n')
	}
	return all
}

// canonical returns data as Talos reads it: loaded with configloader,
// encoded without comments, with no list item repeated.
func canonical(data []byte) ([]byte, error) {
	cfg, err := configloader.NewFromBytes(data)
	if err != nil {
		return nil, err
	}
	return encode(cfg)
}

// encode encodes cfg without comments and without repeated list items.
func encode(cfg config.Provider) ([]byte, error) {
	cfg, _, err := dedupeLists(cfg)
	if err != nil {
		return nil, err
	}
	return cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
}
