package imageimport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
	"github.com/containerd/containerd/api/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// blob is what writeBlob put into the content store.
type blob struct {
	digest digest.Digest
	size   int64
	// head is the blob's first bytes, which tell a compressed layer of
	// a docker-save archive from a plain tar.
	head []byte
}

const (
	// writeChunk is the data of one Write message. Small enough to keep
	// the agent's heap small, big enough for the socket's speed.
	writeChunk = 256 << 10
	// headSize is how much of a blob's start blob.head keeps: enough for
	// the gzip and zstd magic numbers.
	headSize = 10
	// maxJSONBlob bounds an index, manifest or config read back from the
	// store, as containerd's importer bounds the JSON of an archive.
	maxJSONBlob = 20 << 20
)

// writeBlob writes r, size bytes, to the content store under the ingest
// ref, and returns its digest. A blob the store holds already is kept;
// either way the blob joins ctx's lease. As containerd's importer does, it
// does not trust a file's name in the archive: the digest is computed.
// buf is the chunk buffer, reused across calls.
func (c *Containerd) writeBlob(ctx context.Context, ref string, r io.Reader, size int64, buf []byte) (blob, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when we return early
	stream, err := c.content.Write(ctx)
	if err != nil {
		return blob{}, fmt.Errorf("write %s to the content store: %w", ref, err)
	}
	send := func(req *contentapi.WriteContentRequest) (*contentapi.WriteContentResponse, error) {
		if err := stream.Send(req); err != nil {
			if errors.Is(err, io.EOF) {
				// The server ended the stream; Recv has its reason.
				_, err = stream.Recv()
			}
			return nil, err
		}
		return stream.Recv()
	}
	h := sha256.New()
	var (
		b     = blob{size: size}
		first = true
	)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if len(b.head) < headSize {
				b.head = append(b.head, buf[:min(n, headSize-len(b.head))]...)
			}
			h.Write(buf[:n])
			req := &contentapi.WriteContentRequest{Action: contentapi.WriteAction_WRITE, Offset: b.size - size, Data: buf[:n]}
			if first {
				req.Ref, req.Total, first = ref, size, false
			}
			resp, err := send(req)
			if err != nil {
				return blob{}, fmt.Errorf("write %s to the content store: %w", ref, err)
			}
			if want := req.Offset + int64(n); resp.GetOffset() != want {
				return blob{}, fmt.Errorf("write %s to the content store: at offset %d, want %d", ref, resp.GetOffset(), want)
			}
			size -= int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return blob{}, fmt.Errorf("read %s: %w", ref, rerr)
		}
	}
	if size != 0 {
		return blob{}, fmt.Errorf("read %s: %d bytes short", ref, size)
	}
	b.digest = digest.NewDigest(digest.SHA256, h)
	// No expected digest: the store computes it, and on finding the blob
	// there already still adds it to the lease (as containerd's
	// importer, which passes none either).
	req := &contentapi.WriteContentRequest{Action: contentapi.WriteAction_COMMIT, Total: b.size, Offset: b.size}
	if first {
		req.Ref = ref
	}
	resp, err := send(req)
	if isCode(err, codes.AlreadyExists) {
		return b, nil
	}
	if err != nil {
		return blob{}, fmt.Errorf("commit %s to the content store: %w", ref, err)
	}
	if got := digest.Digest(resp.GetDigest()); got != b.digest {
		return blob{}, fmt.Errorf("commit %s to the content store: it computed digest %s, we %s", ref, got, b.digest)
	}
	return b, nil
}

// readBlob returns the content of d, a JSON blob (index, manifest or
// config).
func (c *Containerd) readBlob(ctx context.Context, d ocispec.Descriptor) ([]byte, error) {
	if d.Size > maxJSONBlob {
		return nil, fmt.Errorf("read %s: %d bytes, over %d", d.Digest, d.Size, maxJSONBlob)
	}
	return c.read(ctx, d.Digest, maxJSONBlob)
}

// read returns up to limit bytes from the start of blob d.
func (c *Containerd) read(ctx context.Context, d digest.Digest, limit int64) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.content.Read(ctx, &contentapi.ReadContentRequest{Digest: d.String(), Size: limit})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d, err)
	}
	var out bytes.Buffer
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", d, err)
		}
		out.Write(resp.GetData())
		if int64(out.Len()) > limit {
			return nil, fmt.Errorf("read %s: over %d bytes", d, limit)
		}
	}
}

// setLabels sets labels on blob d, leaving its other labels as they are.
func (c *Containerd) setLabels(ctx context.Context, d digest.Digest, labels map[string]string) error {
	paths := make([]string, 0, len(labels))
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	_, err := c.content.Update(ctx, &contentapi.UpdateRequest{
		Info:       &contentapi.Info{Digest: d.String(), Labels: labels},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: paths},
	})
	if err != nil {
		return fmt.Errorf("label %s: %w", d, err)
	}
	return nil
}

// compressedBlobs returns, for each of diffIDs that the store holds a
// compressed blob of (a blob labelled containerd.io/uncompressed with
// it), that blob.
func (c *Containerd) compressedBlobs(ctx context.Context, diffIDs []digest.Digest) (map[digest.Digest]*contentapi.Info, error) {
	filters := make([]string, len(diffIDs))
	for i, d := range diffIDs {
		filters[i] = fmt.Sprintf("labels.%q==%s", labelUncompressed, d)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.content.List(ctx, &contentapi.ListContentRequest{Filters: filters})
	if err != nil {
		return nil, fmt.Errorf("list compressed blobs: %w", err)
	}
	out := map[digest.Digest]*contentapi.Info{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list compressed blobs: %w", err)
		}
		for _, info := range resp.GetInfo() {
			if d := digest.Digest(info.GetLabels()[labelUncompressed]); d != "" {
				out[d] = info
			}
		}
	}
}

// isCompressed reports whether head starts a gzip or zstd stream (the
// compressions containerd detects).
func isCompressed(head []byte) bool {
	gzip := []byte{0x1f, 0x8b, 0x08}
	zstd := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if bytes.HasPrefix(head, gzip) || bytes.HasPrefix(head, zstd) {
		return true
	}
	// A zstd skippable frame: 0x184D2A50-0x184D2A5F, little-endian.
	return len(head) >= 8 && head[0]&0xf0 == 0x50 && head[1] == 0x2a && head[2] == 0x4d && head[3] == 0x18
}

func descToProto(d ocispec.Descriptor) *types.Descriptor {
	return &types.Descriptor{MediaType: d.MediaType, Digest: d.Digest.String(), Size: d.Size, Annotations: d.Annotations}
}

func descFromProto(d *types.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: d.GetMediaType(), Digest: digest.Digest(d.GetDigest()), Size: d.GetSize(), Annotations: d.GetAnnotations()}
}

// ingestRef is the content store's ingest ref for a file of an archive:
// unique to this agent, so that a concurrent "ctr import" of another
// archive with the same file names does not find the ref locked.
func ingestRef(name string) string {
	return "minikubelet-import-" + strings.TrimPrefix(name, "/")
}
