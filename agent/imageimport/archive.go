package imageimport

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/opencontainers/go-digest"
)

// indexFiles are the files that say what an image archive holds: an OCI
// layout's index.json and a docker-save archive's manifest.json (docker 25
// writes both). Every blob they reach is named by its digest or pinned by
// the config's diff IDs, so their digest is the archive's.
var indexFiles = []string{"index.json", "manifest.json"}

// errNotImageArchive marks a tarball with neither index file.
var errNotImageArchive = errors.New("neither index.json (OCI image layout) nor manifest.json (docker save) in the tarball")

// archiveDigest returns the digest of r's index files, which identifies the
// images the archive holds. On a plain tarball that r can seek in it reads
// only the tar headers and the index files; a gzip-compressed tarball is
// read through.
func archiveDigest(r io.ReadSeeker) (digest.Digest, error) {
	ur, err := uncompressed(r)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(ur)
	found := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read tarball: %w", err)
		}
		name := path.Clean(hdr.Name)
		//nolint:staticcheck // TypeRegA: old tar writers still emit it.
		if (hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA) || (name != indexFiles[0] && name != indexFiles[1]) {
			continue
		}
		const maxIndex = 16 << 20
		if hdr.Size > maxIndex {
			return "", fmt.Errorf("%s is %d bytes, over %d", name, hdr.Size, maxIndex)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", name, err)
		}
		found[name] = data
	}
	if len(found) == 0 {
		return "", errNotImageArchive
	}
	h := sha256.New()
	for _, name := range indexFiles {
		if data, ok := found[name]; ok {
			fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
			h.Write(data)
		}
	}
	return digest.NewDigest(digest.SHA256, h), nil
}

// uncompressed returns r, rewound, as an uncompressed tar stream: r itself
// when it is not compressed (so that tar can seek past file data), else a
// gunzipping reader.
func uncompressed(r io.ReadSeeker) (io.Reader, error) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	var magic [2]byte
	n, err := io.ReadFull(r, magic[:])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if n == len(magic) && magic == [2]byte{0x1f, 0x8b} {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gunzip: %w", err)
		}
		return zr, nil
	}
	return r, nil
}
