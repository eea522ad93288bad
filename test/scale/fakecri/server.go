package fakecri

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/utils/clock"
)

// Config configures a Server.
type Config struct {
	// PodCIDR is where sandboxes on the pod network get their addresses
	// from (its first address is left out, as a bridge's gateway).
	// Required.
	PodCIDR netip.Prefix
	// StateDir is the filesystem ImageFsInfo reports. Required.
	StateDir string
	// EventBuffer is how many events a slow GetContainerEvents subscriber
	// may lag behind before the next ones are dropped for it (counted in
	// Dropped); 1024 when 0.
	EventBuffer int
	// Clock stamps events and stats; the real clock when nil.
	Clock clock.PassiveClock
}

// Server is the in-memory runtime: Register serves it on a gRPC server.
// Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	rt     *critest.FakeRuntimeService
	images *critest.FakeImageService
	ips    *ipPool
	events *broadcaster

	// mu serialises the verbs that change state, each with the events it
	// publishes, so that subscribers see events in the order of the
	// changes.
	mu sync.Mutex
}

// New returns a Server with no sandbox, container or image.
func New(cfg Config) (*Server, error) {
	var errs []error
	if !cfg.PodCIDR.IsValid() || !cfg.PodCIDR.Addr().Is4() || cfg.PodCIDR.Bits() > 30 {
		errs = append(errs, fmt.Errorf("fakecri: PodCIDR %v: want an IPv4 prefix of at most /30", cfg.PodCIDR))
	}
	if cfg.StateDir == "" {
		errs = append(errs, errors.New("fakecri: StateDir is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.EventBuffer == 0 {
		cfg.EventBuffer = 1024
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	rt := critest.NewFakeRuntimeService()
	rt.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
	rt.FakeLinuxConfiguration = &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS}
	images := critest.NewFakeImageService()
	images.FakeImageSize = imageSize
	return &Server{
		cfg:    cfg,
		rt:     rt,
		images: images,
		ips:    newIPPool(cfg.PodCIDR.Masked()),
		events: newBroadcaster(cfg.EventBuffer),
	}, nil
}

// Register registers the runtime and image services on srv.
func (s *Server) Register(srv *grpc.Server) {
	runtimeapi.RegisterRuntimeServiceServer(srv, &runtimeServer{s: s})
	runtimeapi.RegisterImageServiceServer(srv, &imageServer{s: s})
}

// Dropped is how many events were dropped for subscribers that lagged
// behind by more than Config.EventBuffer.
func (s *Server) Dropped() uint64 { return s.events.dropped.Load() }

// forget empties the fakes' records of the calls they got: nothing reads
// them, and they would grow with every call.
func (s *Server) forget() {
	s.rt.Lock()
	s.rt.Called = s.rt.Called[:0]
	s.rt.Unlock()
	s.images.Lock()
	s.images.Called = s.images.Called[:0]
	s.images.Unlock()
}

// grpcError turns the fakes' errors into gRPC statuses: "not found" ones
// into NotFound, as a runtime answers, the rest into Unknown.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if strings.Contains(err.Error(), "not found") {
		return status.Error(codes.NotFound, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// runtimeServer is the RuntimeService; the verbs live in runtime.go,
// sandbox.go, container.go and stats.go.
type runtimeServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	s *Server
}

// imageServer is the ImageService (image.go).
type imageServer struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}
