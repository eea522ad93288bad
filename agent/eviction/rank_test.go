package eviction

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func statsOf(m map[types.UID]statsapi.PodStats) statsFunc {
	return func(p *v1.Pod) (statsapi.PodStats, bool) {
		s, ok := m[p.UID]
		return s, ok
	}
}

func fsUse(rootfs, logs uint64, volumes map[string]uint64) statsapi.PodStats {
	s := statsapi.PodStats{Containers: []statsapi.ContainerStats{{
		Name:   "main",
		Rootfs: &statsapi.FsStats{UsedBytes: ptr.To(rootfs), InodesUsed: ptr.To(rootfs / mi)},
		Logs:   &statsapi.FsStats{UsedBytes: ptr.To(logs), InodesUsed: ptr.To(uint64(1))},
	}}}
	for n, u := range volumes {
		s.VolumeStats = append(s.VolumeStats, statsapi.VolumeStats{Name: n, FsStats: statsapi.FsStats{UsedBytes: ptr.To(u), InodesUsed: ptr.To(u / mi)}})
	}
	return s
}

// Disk ranking: over its request first, then priority, then the most above
// its request; with a dedicated image filesystem the node's counts logs
// and local volumes only, the image filesystem's writable layers only;
// memory-backed emptyDirs never.
func TestRankDisk(t *testing.T) {
	withVolume := func(name string, medium v1.StorageMedium) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium}}})
		}
	}
	layers := pod("layers")
	volume := pod("volume", withVolume("data", v1.StorageMediumDefault))
	tmpfs := pod("tmpfs", withVolume("shm", v1.StorageMediumMemory))
	requested := pod("requested", requests(v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}))
	important := pod("important", func(p *v1.Pod) { p.Spec.Priority = ptr.To[int32](1000) })
	nostats := pod("nostats")
	stats := statsOf(map[types.UID]statsapi.PodStats{
		layers.UID:    fsUse(300*mi, 0, nil),
		volume.UID:    fsUse(0, 10*mi, map[string]uint64{"data": 200 * mi}),
		tmpfs.UID:     fsUse(0, 0, map[string]uint64{"shm": 900 * mi}),
		requested.UID: fsUse(2000*mi, 0, nil),
		important.UID: fsUse(5000*mi, 0, nil),
	})
	for _, tc := range []struct {
		signal    Signal
		dedicated bool
		want      []string
	}{
		// Over their requests: layers, volume, important (by priority,
		// then use); then tmpfs (0 above its request) before requested
		// (below it).
		{SignalNodeFsAvailable, false, []string{"nostats", "layers", "volume", "important", "tmpfs", "requested"}},
		// Only volume is over its request on the node's filesystem.
		{SignalNodeFsAvailable, true, []string{"nostats", "volume", "tmpfs", "layers", "requested", "important"}},
		// Writable layers only: layers and important are over.
		{SignalImageFsAvailable, true, []string{"nostats", "layers", "important", "tmpfs", "volume", "requested"}},
	} {
		pods := []*v1.Pod{tmpfs, important, requested, volume, layers, nostats}
		rankFor(tc.signal, tc.dedicated)(pods, stats)
		if got := names(pods); !slices.Equal(got, tc.want) {
			t.Errorf("%s dedicated=%v: %v, want %v", tc.signal, tc.dedicated, got, tc.want)
		}
	}
}
