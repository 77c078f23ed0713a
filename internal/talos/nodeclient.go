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

package talos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const (
	// bootIDPath is the kernel's boot ID, read over the API as talosctl
	// does to prove a reboot.
	bootIDPath = "/proc/sys/kernel/random/boot_id"
	// schematicExtension is the extension through which an Image Factory
	// image reports its schematic ID, as the extension's version.
	schematicExtension = "schematic"
	// upgradeMessagesKept is how many progress messages of a failed upgrade
	// its error carries.
	upgradeMessagesKept = 5
)

// systemContainerd is the containerd instance Talos pulls installer images
// into, as "talosctl upgrade" does.
var systemContainerd = &common.ContainerdInstance{
	Driver:    common.ContainerDriver_CRI,
	Namespace: common.ContainerdNamespace_NS_SYSTEM,
}

// nodeClient is the Client of one node over the machinery gRPC client.
type nodeClient struct {
	talos          *talosclient.Client
	node           string
	timeout        time.Duration
	installTimeout time.Duration
	// onTLSFailure, when set, is called when a call fails its TLS
	// handshake: the credentials it dialed with may be outdated.
	onTLSFailure func()
}

var _ Client = &nodeClient{}

// callContext bounds one call and pins it to the node.
func (c *nodeClient) callContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)

	return talosclient.WithNode(ctx, c.node), cancel
}

func (c *nodeClient) Version(ctx context.Context) (string, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	return c.version(ctx)
}

func (c *nodeClient) version(ctx context.Context) (string, error) {
	resp, err := c.talos.Version(ctx)
	if err != nil {
		return "", c.wrap(ctx, "reading the Talos version", err)
	}

	for _, msg := range resp.GetMessages() {
		if tag := msg.GetVersion().GetTag(); tag != "" {
			return tag, nil
		}
	}

	return "", fmt.Errorf("reading the Talos version of node %s: empty answer", c.node)
}

func (c *nodeClient) BootID(ctx context.Context) (string, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	r, err := c.talos.Read(ctx, bootIDPath)
	if err != nil {
		return "", c.wrap(ctx, "reading the boot ID", err)
	}

	defer r.Close() //nolint:errcheck // read-only stream; errors surface through ReadAll.

	body, err := io.ReadAll(r)
	if err != nil {
		return "", c.wrap(ctx, "reading the boot ID", err)
	}

	bootID := strings.TrimSpace(string(body))
	if bootID == "" {
		return "", fmt.Errorf("reading the boot ID of node %s: empty answer", c.node)
	}

	return bootID, nil
}

func (c *nodeClient) BootTime(ctx context.Context) (time.Time, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	resp, err := c.talos.MachineClient.SystemStat(ctx, &emptypb.Empty{})
	if err != nil {
		return time.Time{}, c.wrap(ctx, "reading the boot time", err)
	}

	for _, msg := range resp.GetMessages() {
		if bt := msg.GetBootTime(); bt != 0 {
			return time.Unix(int64(bt), 0).UTC(), nil //nolint:gosec // seconds since the epoch fit an int64.
		}
	}

	return time.Time{}, fmt.Errorf("reading the boot time of node %s: empty answer", c.node)
}

func (c *nodeClient) Stage(ctx context.Context) (MachineStage, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	status, err := safe.StateGetByID[*runtime.MachineStatus](ctx, c.talos.COSI, runtime.MachineStatusID)
	if err != nil {
		return "", c.wrap(ctx, "reading the machine status", err)
	}

	return MachineStage(strings.ToLower(status.TypedSpec().Stage.String())), nil
}

// eventsQuiet is how long the event log of a node stays quiet before the
// events it keeps are taken as read.
const eventsQuiet = time.Second

func (c *nodeClient) UpgradeStarted(ctx context.Context) (bool, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	stream, err := c.talos.MachineClient.Events(ctx, &machine.EventsRequest{TailEvents: -1})
	if err != nil {
		return false, c.wrap(ctx, "reading the events", err)
	}

	events := make(chan *machine.Event)
	failed := make(chan error, 1)

	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				failed <- err
				return
			}

			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()

	quiet := time.NewTimer(eventsQuiet)
	defer quiet.Stop()

	for {
		select {
		case ev := <-events:
			if upgradeStart(ev) {
				return true, nil
			}

			quiet.Reset(eventsQuiet)
		case err := <-failed:
			return false, c.wrap(ctx, "reading the events", err)
		case <-quiet.C:
			return false, nil
		}
	}
}

// upgradeStart reports whether ev is the start of an upgrade sequence.
func upgradeStart(ev *machine.Event) bool {
	data := ev.GetData()
	if data == nil || !strings.HasSuffix(data.GetTypeUrl(), "/machine.SequenceEvent") {
		return false
	}

	var seq machine.SequenceEvent
	if err := proto.Unmarshal(data.GetValue(), &seq); err != nil {
		return false
	}

	return seq.GetSequence() == "upgrade" && seq.GetAction() == machine.SequenceEvent_START
}

func (c *nodeClient) Schematic(ctx context.Context) (string, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	exts, err := safe.StateListAll[*runtime.ExtensionStatus](ctx, c.talos.COSI)
	if err != nil {
		return "", c.wrap(ctx, "listing the extensions", err)
	}

	for ext := range exts.All() {
		if ext.TypedSpec().Metadata.Name == schematicExtension {
			return ext.TypedSpec().Metadata.Version, nil
		}
	}

	return "", nil
}

// pull pulls image with ImageService.Pull, the API of Talos 1.13 and later.
func (c *nodeClient) pull(ctx context.Context, image string) error {
	stream, err := c.talos.ImageClient.Pull(ctx, &machine.ImageServicePullRequest{Containerd: systemContainerd, ImageRef: image})
	if err != nil {
		return c.wrap(ctx, fmt.Sprintf("pulling image %q", image), err)
	}

	pulled := false

	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return c.wrap(ctx, fmt.Sprintf("pulling image %q", image), err)
		}

		if resp.GetName() != "" {
			pulled = true
		}
	}

	if !pulled {
		return fmt.Errorf("pulling image %q on node %s: the pull ended without naming the image", image, c.node)
	}

	return nil
}

func (c *nodeClient) Upgrade(ctx context.Context, image string, opts UpgradeOptions) (UpgradeResult, error) {
	ctx, cancel := c.callContext(ctx, c.installTimeout)
	defer cancel()

	version, err := c.version(ctx)
	if err != nil {
		return UpgradeResult{}, err
	}

	if opts.BootID != "" {
		bootID, err := c.BootID(ctx)
		if err != nil {
			return UpgradeResult{}, err
		}

		if bootID != opts.BootID {
			return UpgradeResult{}, fmt.Errorf("node %s runs boot %s, not %s: %w", c.node, bootID, opts.BootID, ErrBootedSince)
		}
	}

	lifecycle, err := UsesLifecycleAPI(version)
	if err != nil {
		return UpgradeResult{}, fmt.Errorf("node %s reports version %q: %w", c.node, version, err)
	}

	if !lifecycle {
		if !opts.AllowSelfReboot {
			return UpgradeResult{}, fmt.Errorf("node %s runs %s: %w", c.node, version, ErrRebootsItself)
		}

		legacyMode := machine.UpgradeRequest_DEFAULT
		if opts.RebootMode == upgradev1.RebootModePowerCycle {
			legacyMode = machine.UpgradeRequest_POWERCYCLE
		}

		//nolint:staticcheck // SA1019: the legacy API is the only one of Talos before 1.13.
		if _, err := c.talos.UpgradeWithOptions(ctx, talosclient.WithUpgradeImage(image), talosclient.WithUpgradeRebootMode(legacyMode)); err != nil {
			return UpgradeResult{RebootsItself: true}, interrupted(c.wrap(ctx, fmt.Sprintf("upgrading to %q", image), err))
		}

		return UpgradeResult{RebootsItself: true}, nil
	}

	if err := c.pull(ctx, image); err != nil {
		return UpgradeResult{}, err
	}

	return UpgradeResult{}, c.install(ctx, image)
}

// install runs LifecycleService.Upgrade and reads its stream to the exit
// code.
func (c *nodeClient) install(ctx context.Context, image string) error {
	stream, err := c.talos.LifecycleClient.Upgrade(ctx, &machine.LifecycleServiceUpgradeRequest{
		Containerd: systemContainerd,
		Source:     &machine.InstallArtifactsSource{ImageName: image},
	})
	if err != nil {
		return interrupted(c.wrap(ctx, fmt.Sprintf("upgrading to %q", image), err))
	}

	var (
		messages []string
		exitCode *int32
	)

	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil && exitCode != nil {
			// The exit code came: the outcome is known, whatever
			// happened to the end of the stream.
			break
		}

		if err != nil && installRunning(err) {
			return fmt.Errorf("%w: %w", ErrInstallInProgress, c.wrap(ctx, fmt.Sprintf("upgrading to %q", image), err))
		}

		if err != nil {
			return interrupted(c.wrap(ctx, fmt.Sprintf("upgrading to %q", image), err))
		}

		switch progress := resp.GetProgress().GetResponse().(type) {
		case *machine.LifecycleServiceInstallProgress_Message:
			messages = append(messages, progress.Message)
			if len(messages) > upgradeMessagesKept {
				messages = messages[1:]
			}
		case *machine.LifecycleServiceInstallProgress_ExitCode:
			code := progress.ExitCode
			exitCode = &code
		}
	}

	switch {
	case exitCode == nil:
		return fmt.Errorf("%w: upgrade of node %s to %q ended without an exit code; last messages: %s",
			ErrUpgradeFailed, c.node, image, strings.Join(messages, "; "))
	case *exitCode != 0:
		return fmt.Errorf("%w: upgrade of node %s to %q exited with code %d; last messages: %s",
			ErrUpgradeFailed, c.node, image, *exitCode, strings.Join(messages, "; "))
	}

	return nil
}

func (c *nodeClient) Reboot(ctx context.Context, mode upgradev1.RebootMode) error {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	talosMode := machine.RebootRequest_DEFAULT
	if mode == upgradev1.RebootModePowerCycle {
		talosMode = machine.RebootRequest_POWERCYCLE
	}

	if err := c.talos.Reboot(ctx, talosclient.WithRebootMode(talosMode)); err != nil {
		return c.wrap(ctx, "rebooting", err)
	}

	return nil
}

// EtcdHealth lists the members from the node, then asks each member's node
// (through the node's apid) for its status; a member whose status cannot be
// read, reports errors or has an alarm is unhealthy.
func (c *nodeClient) EtcdHealth(ctx context.Context) (EtcdHealth, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	list, err := c.talos.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	if err != nil {
		return EtcdHealth{}, c.wrap(ctx, "listing the etcd members", err)
	}

	alarms := map[uint64][]string{}

	alarmList, err := c.talos.EtcdAlarmList(ctx)
	if err != nil {
		return EtcdHealth{}, c.wrap(ctx, "listing the etcd alarms", err)
	}

	for _, msg := range alarmList.GetMessages() {
		for _, a := range msg.GetMemberAlarms() {
			if a.GetAlarm() != machine.EtcdMemberAlarm_NONE {
				alarms[a.GetMemberId()] = append(alarms[a.GetMemberId()], a.GetAlarm().String())
			}
		}
	}

	var health EtcdHealth

	for _, msg := range list.GetMessages() {
		for _, m := range msg.GetMembers() {
			member := EtcdMember{Name: m.GetHostname(), Healthy: true}

			switch {
			case len(alarms[m.GetId()]) > 0:
				member.Healthy = false
				member.Message = "alarm " + strings.Join(alarms[m.GetId()], ", ")
			case m.GetIsLearner():
				member.Healthy = false
				member.Message = "member is a learner"
			default:
				member.Healthy, member.Message = c.memberStatus(ctx, m)
			}

			health.Members = append(health.Members, member)
		}
	}

	return health, nil
}

// memberStatus reads the status of member m from its own node.
func (c *nodeClient) memberStatus(ctx context.Context, m *machine.EtcdMember) (bool, string) {
	host := memberHost(m)
	if host == "" {
		return false, "member has no client or peer URL"
	}

	resp, err := c.talos.EtcdStatus(talosclient.WithNode(ctx, host))
	if err != nil {
		return false, fmt.Sprintf("status unavailable: %s", status.Convert(err).Message())
	}

	for _, msg := range resp.GetMessages() {
		if errs := msg.GetMemberStatus().GetErrors(); len(errs) > 0 {
			return false, strings.Join(errs, "; ")
		}
	}

	return true, ""
}

// memberHost is the host of a member's first client URL, else peer URL.
func memberHost(m *machine.EtcdMember) string {
	for _, raw := range append(append([]string{}, m.GetClientUrls()...), m.GetPeerUrls()...) {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			return u.Hostname()
		}
	}

	return ""
}

func (c *nodeClient) Close() error {
	return c.talos.Close()
}

// installRunning reports whether err is the refusal of an install because
// another one runs on the node: the lifecycle service of machined installs
// one image at a time, and answers FailedPrecondition "another
// installation/upgrade is already in progress".
func installRunning(err error) bool {
	return status.Code(err) == codes.FailedPrecondition && strings.Contains(status.Convert(err).Message(), "already in progress")
}

// interrupted marks the error of an upgrade request that was sent, or may
// have been, as ErrUpgradeInterrupted when it is a transport error (the
// node's answer was lost or late): the node may be acting on it. An error
// the node answered with, or a TLS failure (no request is sent before the
// handshake), is the call's outcome.
func interrupted(err error) error {
	return interruptedAs(ErrUpgradeInterrupted, err)
}

// interruptedAs marks err with sentinel when it is a transport error, as
// interrupted does.
func interruptedAs(sentinel, err error) error {
	if !errors.Is(err, ErrUnreachable) && !errors.Is(err, ErrDeadlineExceeded) {
		return err
	}

	return fmt.Errorf("%w: %w", sentinel, err)
}

// wrap turns a call error into one of the package's typed errors when it is
// a timeout, a TLS failure or an unreachable node, keeping the original.
func (c *nodeClient) wrap(ctx context.Context, op string, err error) error {
	var kind error

	code := status.Code(err)
	msg := status.Convert(err).Message()

	switch {
	case code == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded):
		kind = ErrDeadlineExceeded
	case code == codes.Unavailable && isTLSFailure(msg):
		kind = ErrTLS
		if c.onTLSFailure != nil {
			c.onTLSFailure()
		}
	case code == codes.Unavailable:
		kind = ErrUnreachable
	}

	if kind == nil {
		return fmt.Errorf("%s on node %s: %w", op, c.node, err)
	}

	return fmt.Errorf("%s on node %s: %w: %w", op, c.node, kind, err)
}

// isTLSFailure tells a failed TLS handshake from other transport errors by
// the gRPC transport's message.
func isTLSFailure(msg string) bool {
	for _, marker := range []string{"authentication handshake failed", "tls:", "x509:", "certificate"} {
		if strings.Contains(msg, marker) {
			return true
		}
	}

	return false
}
