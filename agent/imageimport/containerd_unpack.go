package imageimport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	diffapi "github.com/containerd/containerd/api/services/diff/v1"
	snapshotsapi "github.com/containerd/containerd/api/services/snapshots/v1"
	"github.com/containerd/containerd/api/types"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/grpc/codes"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/cleanup"
)

// rootFS is what unpacking an image takes: its config, its layers in
// order (bottom first) and their diff IDs, from the config.
type rootFS struct {
	config  ocispec.Descriptor
	layers  []ocispec.Descriptor
	diffIDs []digest.Digest
}

// unpack unpacks image target for c.snapshotter as containerd's client
// does (Image.Unpack): for each layer, bottom first, unless a snapshot of
// the stack up to it exists already, a snapshot is prepared on the stack
// below, the layer applied to it by the diff service and the result
// committed under the stack's chain ID; a layer so applied is labelled
// with its diff ID (containerd.io/uncompressed), and the config with the
// top chain ID (containerd.io/gc.ref.snapshot.<snapshotter>), which keeps
// the snapshots from the garbage collector while the image stays.
func (c *Containerd) unpack(ctx context.Context, target ocispec.Descriptor) error {
	fs, err := c.rootFS(ctx, target)
	if err != nil {
		return err
	}
	if len(fs.diffIDs) != len(fs.layers) {
		return errors.New("mismatched image rootfs and manifest layers")
	}
	var chain []digest.Digest
	for i, layer := range fs.layers {
		applied, err := c.applyLayer(ctx, layer, chain, fs.diffIDs[i])
		if err != nil {
			return fmt.Errorf("apply layer %s: %w", fs.diffIDs[i], err)
		}
		if applied {
			if err := c.setLabels(ctx, layer.Digest, map[string]string{labelUncompressed: fs.diffIDs[i].String()}); err != nil {
				return err
			}
		}
		chain = append(chain, fs.diffIDs[i])
	}
	return c.setLabels(ctx, fs.config.Digest, map[string]string{labelGCSnapshotPrefix + c.snapshotter: identity.ChainID(chain).String()})
}

// applyLayer makes the snapshot of chain with diffID on top, applying
// layer onto the snapshot of chain, unless it exists already. It reports
// whether it applied the layer.
func (c *Containerd) applyLayer(ctx context.Context, layer ocispec.Descriptor, chain []digest.Digest, diffID digest.Digest) (bool, error) {
	parent := identity.ChainID(chain).String()
	name := identity.ChainID(append(chain[:len(chain):len(chain)], diffID)).String()
	_, err := c.snapshots.Stat(ctx, &snapshotsapi.StatSnapshotRequest{Snapshotter: c.snapshotter, Key: name})
	if err == nil {
		return false, nil
	}
	if !isCode(err, codes.NotFound) {
		return false, fmt.Errorf("stat snapshot %s: %w", name, err)
	}
	key, mounts, err := c.prepare(ctx, name, parent)
	if err != nil {
		return false, err
	}
	committed := false
	defer func() {
		if !committed {
			c.removeSnapshot(ctx, key)
		}
	}()
	resp, err := c.diff.Apply(ctx, &diffapi.ApplyRequest{Diff: descToProto(layer), Mounts: mounts})
	if err != nil {
		return false, fmt.Errorf("extract layer %s: %w", diffID, err)
	}
	if got := resp.GetApplied().GetDigest(); got != diffID.String() {
		return false, fmt.Errorf("extract layer %s: the diff service computed diff ID %s", diffID, got)
	}
	_, err = c.snapshots.Commit(ctx, &snapshotsapi.CommitSnapshotRequest{Snapshotter: c.snapshotter, Name: name, Key: key})
	if isCode(err, codes.AlreadyExists) {
		// Another unpack of the same layers got there first.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("commit snapshot %s: %w", name, err)
	}
	committed = true
	return true, nil
}

// prepare prepares an active snapshot on parent to extract the layer of
// snapshot name into, under a key of containerd's extraction format, and
// returns the key and its mounts.
func (c *Containerd) prepare(ctx context.Context, name, parent string) (string, []*types.Mount, error) {
	for range 3 {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return "", nil, err
		}
		key := fmt.Sprintf("extract-%s %s", hex.EncodeToString(rnd[:]), name)
		resp, err := c.snapshots.Prepare(ctx, &snapshotsapi.PrepareSnapshotRequest{Snapshotter: c.snapshotter, Key: key, Parent: parent})
		if isCode(err, codes.AlreadyExists) {
			continue // the key is taken: draw another
		}
		if err != nil {
			return "", nil, fmt.Errorf("prepare extraction snapshot %q: %w", key, err)
		}
		return key, resp.GetMounts(), nil
	}
	return "", nil, fmt.Errorf("prepare extraction snapshot for %s: every key drawn was taken", name)
}

// removeSnapshot removes the extraction snapshot key, also after ctx was
// cancelled; a failure is logged (the import's lease lets containerd's
// garbage collector take it).
func (c *Containerd) removeSnapshot(ctx context.Context, key string) {
	rctx, cancel := cleanup.Context(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.snapshots.Remove(rctx, &snapshotsapi.RemoveSnapshotRequest{Snapshotter: c.snapshotter, Key: key}); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot remove an extraction snapshot", "snapshotter", c.snapshotter, "key", key)
	}
}

// rootFS returns the config, layers and diff IDs of image target for this
// node's platform.
func (c *Containerd) rootFS(ctx context.Context, target ocispec.Descriptor) (rootFS, error) {
	m, err := c.manifest(ctx, target)
	if err != nil {
		return rootFS{}, err
	}
	data, err := c.readBlob(ctx, m.Config)
	if err != nil {
		return rootFS{}, err
	}
	var config ocispec.Image
	if err := json.Unmarshal(data, &config); err != nil {
		return rootFS{}, fmt.Errorf("image config %s: %w", m.Config.Digest, err)
	}
	fs := rootFS{config: m.Config, diffIDs: config.RootFS.DiffIDs}
	for _, l := range m.Layers {
		// Other blobs of an artifact are no layers.
		if isLayerType(l.MediaType) {
			fs.layers = append(fs.layers, l)
		}
	}
	return fs, nil
}

// manifest returns the manifest of image target for this node's
// platform: target itself, or in an index the best match of the
// platforms this node runs, as containerd's images.Manifest picks it.
func (c *Containerd) manifest(ctx context.Context, target ocispec.Descriptor) (ocispec.Manifest, error) {
	var (
		found    *ocispec.Manifest
		wasIndex bool
		visit    func(d ocispec.Descriptor) error
	)
	visit = func(d ocispec.Descriptor) error {
		switch {
		case isManifestType(d.MediaType):
			var m ocispec.Manifest
			if err := c.readDocument(ctx, d, &m); err != nil {
				return fmt.Errorf("manifest: %w", err)
			}
			if d.Digest != target.Digest {
				if d.Platform != nil && !c.platform.Match(*d.Platform) {
					return nil
				}
				if d.Platform == nil {
					p, err := c.configPlatform(ctx, m.Config)
					if err != nil {
						return err
					}
					if !c.platform.Match(p) {
						return nil
					}
				}
			}
			if found == nil {
				found = &m
			}
			return nil
		case isIndexType(d.MediaType):
			var idx ocispec.Index
			if err := c.readDocument(ctx, d, &idx); err != nil {
				return fmt.Errorf("manifest: %w", err)
			}
			descs := c.filterPlatforms(idx.Manifests)
			sort.SliceStable(descs, func(i, j int) bool {
				if descs[i].Platform == nil {
					return false
				}
				if descs[j].Platform == nil {
					return true
				}
				return c.platform.Less(*descs[i].Platform, *descs[j].Platform)
			})
			wasIndex = true
			if len(descs) > 0 {
				return visit(descs[0])
			}
			return nil
		}
		return fmt.Errorf("unexpected media type %v for %v: not found", d.MediaType, d.Digest)
	}
	if err := visit(target); err != nil {
		return ocispec.Manifest{}, err
	}
	if found == nil {
		if wasIndex {
			return ocispec.Manifest{}, fmt.Errorf("no match for platform in manifest %v: not found", target.Digest)
		}
		return ocispec.Manifest{}, fmt.Errorf("manifest %v: not found", target.Digest)
	}
	return *found, nil
}
