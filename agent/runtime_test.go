package agent

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/minikubelet/minikubelet/cgroups"
)

type fakeRuntimeConfig struct {
	resp *runtimeapi.RuntimeConfigResponse
	err  error
}

func (f fakeRuntimeConfig) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return f.resp, f.err
}

func TestCgroupDriver(t *testing.T) {
	linux := func(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
	}
	tests := []struct {
		name string
		flag string
		rt   fakeRuntimeConfig
		want string
	}{
		{"runtime says cgroupfs", cgroups.DriverSystemd, fakeRuntimeConfig{resp: linux(runtimeapi.CgroupDriver_CGROUPFS)}, cgroups.DriverCgroupfs},
		{"runtime says systemd", cgroups.DriverCgroupfs, fakeRuntimeConfig{resp: linux(runtimeapi.CgroupDriver_SYSTEMD)}, cgroups.DriverSystemd},
		{"containerd 1.6: unimplemented", cgroups.DriverCgroupfs, fakeRuntimeConfig{err: status.Error(codes.Unimplemented, "unknown method RuntimeConfig")}, cgroups.DriverCgroupfs},
		{"other error", cgroups.DriverSystemd, fakeRuntimeConfig{err: errors.New("deadline exceeded")}, cgroups.DriverSystemd},
		{"no linux section", cgroups.DriverSystemd, fakeRuntimeConfig{resp: &runtimeapi.RuntimeConfigResponse{}}, cgroups.DriverSystemd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			if got := cgroupDriver(ctx, tt.rt, tt.flag); got != tt.want {
				t.Errorf("cgroupDriver = %s, want %s", got, tt.want)
			}
		})
	}
}
