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

package talossim

import (
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// pullSteps is how many progress messages a pull streams.
const pullSteps = 4

// lifecycleAPIAvailable reports whether the node's version serves the
// ImageService and LifecycleService (Talos 1.13 and later).
func lifecycleAPIAvailable(n *Node) bool {
	var major, minor int

	if _, err := fmt.Sscanf(n.Version(), "v%d.%d", &major, &minor); err != nil {
		return false
	}

	return major > 1 || (major == 1 && minor >= 13)
}

// imageService implements ImageService.Pull.
type imageService struct {
	machine.UnimplementedImageServiceServer

	*apiServer
}

func (s *imageService) Pull(req *machine.ImageServicePullRequest, srv grpc.ServerStreamingServer[machine.ImageServicePullResponse]) error {
	n := target(srv.Context()).node
	if !lifecycleAPIAvailable(n) {
		return status.Error(codes.Unimplemented, "unknown service machine.ImageService")
	}

	if req.GetImageRef() == "" {
		return status.Error(codes.InvalidArgument, "image reference is required")
	}

	delay := n.Faults().PullDelay
	start := time.Now()

	for i := range pullSteps {
		if err := sleepCtx(srv.Context(), delay/pullSteps); err != nil {
			return err
		}

		if err := srv.Send(&machine.ImageServicePullResponse{Response: &machine.ImageServicePullResponse_PullProgress{
			PullProgress: &machine.ImageServicePullProgress{
				LayerId: "sha256:0123456789ab",
				Progress: &machine.ImageServicePullLayerProgress{
					Status:  machine.ImageServicePullLayerProgress_DOWNLOADING,
					Elapsed: durationpb.New(time.Since(start)),
					Offset:  int64(i+1) * 25 << 20,
					Total:   pullSteps * 25 << 20,
				},
			},
		}}); err != nil {
			return err
		}
	}

	n.mu.Lock()
	n.pulled[req.GetImageRef()] = true
	n.mu.Unlock()

	return srv.Send(&machine.ImageServicePullResponse{Response: &machine.ImageServicePullResponse_Name{Name: req.GetImageRef()}})
}

// lifecycleService implements LifecycleService.Upgrade: it installs a
// pulled installer image and does not reboot.
type lifecycleService struct {
	machine.UnimplementedLifecycleServiceServer

	*apiServer
}

func (s *lifecycleService) Upgrade(req *machine.LifecycleServiceUpgradeRequest, srv grpc.ServerStreamingServer[machine.LifecycleServiceUpgradeResponse]) error {
	n := target(srv.Context()).node
	if !lifecycleAPIAvailable(n) {
		return status.Error(codes.Unimplemented, "unknown service machine.LifecycleService")
	}

	image := req.GetSource().GetImageName()

	staged, err := parseInstaller(image)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}

	n.mu.Lock()
	pulled := n.pulled[image]
	exitCode := n.faults.UpgradeExitCode
	delay := n.faults.InstallDelay
	installing := n.installing
	if pulled && !installing {
		n.installing = true
	}
	n.mu.Unlock()

	if !pulled {
		return status.Errorf(codes.FailedPrecondition, "image %q is not pulled: pull it with ImageService.Pull first", image)
	}

	if installing {
		return status.Error(codes.FailedPrecondition, "another installation/upgrade is already in progress")
	}

	defer func() {
		n.mu.Lock()
		n.installing = false
		n.mu.Unlock()
	}()

	// Once started, the installer runs to its end, as machined's does (it
	// waits for the installer's task on a context detached from the
	// request): a caller that goes away only stops hearing of it. Its
	// output is streamed as it comes, and lost with the caller.
	var sendErr error
	message := func(msg string) {
		if sendErr == nil {
			sendErr = srv.Send(&machine.LifecycleServiceUpgradeResponse{Progress: &machine.LifecycleServiceInstallProgress{
				Response: &machine.LifecycleServiceInstallProgress_Message{Message: msg},
			}})
		}
	}

	message("running installer " + image)
	message("validating installation target")
	message("writing the boot partition of the inactive slot")
	time.Sleep(delay)

	if exitCode != 0 {
		message("error: failed to install bootloader: simulated failure")
	} else {
		n.mu.Lock()
		n.staged = staged
		n.mu.Unlock()
		message("upgrade of the inactive slot complete, reboot to activate " + staged.version)
	}

	if sendErr != nil {
		return sendErr
	}

	return srv.Send(&machine.LifecycleServiceUpgradeResponse{Progress: &machine.LifecycleServiceInstallProgress{
		Response: &machine.LifecycleServiceInstallProgress_ExitCode{ExitCode: exitCode},
	}})
}
