// Package imagegc removes unused images when the image filesystem fills
// up, as the kubelet's image garbage collector does.
//
// A Manager's Run makes a pass at start and then every Config.Period. A
// pass first refreshes what the Manager knows of each image (by image ID,
// in memory only, so a restarted agent starts afresh): when it first saw
// the image, when it last saw a container (running or exited) use it, its
// size and whether the runtime pins it. It then reads the image
// filesystem's usage: CRI ImageFsInfo names the filesystem's mountpoint,
// and statfs of that mountpoint gives its capacity and available bytes.
// When usage reaches Policy.HighThresholdPercent, the pass removes images
// (CRI RemoveImage, by ID) until the bytes freed bring usage down to
// Policy.LowThresholdPercent:
//
//	capacity*(100-low)/100 - available bytes
//
// taking least recently used images first (never-used ones by first
// sighting) and skipping every image that
//   - a container uses (CRI ListContainers, all states: an exited container
//     may be restarted from its image),
//   - the runtime pins (CRI Image.Pinned; containerd 2.x pins its sandbox
//     image),
//   - is the sandbox image: Config.SandboxImage (--pod-infra-container-image)
//     and the "sandboxImage" of the runtime's CRI config, read from
//     Status(verbose) (containerd 1.6 and 1.7, which do not pin it),
//   - was first seen less than Policy.MinAge ago (it may have been pulled
//     for a container about to be created).
//
// A pass that cannot free enough logs what it freed and what it wanted;
// nothing else happens until the next pass. HighThresholdPercent 100
// turns garbage collection off.
//
// Data enters through the CRI runtime and image services and the statfs
// of the image filesystem; it leaves as CRI RemoveImage calls, log lines
// and the Config.OnRemoved callback (the agent's
// kubelet_image_garbage_collected_total counter).
package imagegc
