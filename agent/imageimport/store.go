package imageimport

import (
	"context"
	"io"
)

// Store is the runtime's image store as the importer needs it.
type Store interface {
	// Import reads one image archive (an OCI image layout or a docker-save
	// tarball) from r, creates or updates the images it names and unpacks
	// each for the runtime's snapshotter. It returns the images it named,
	// with their target digests; an archive that names none yields none.
	// Importing an archive again is harmless: content already present is
	// kept, and names are moved to the archive's targets.
	Import(ctx context.Context, r io.Reader) ([]Image, error)
	// Has reports whether img.Name exists, points at img.Target and is
	// unpacked. A missing image is (false, nil), not an error.
	Has(ctx context.Context, img Image) (bool, error)
}

// Image is an image name and the digest of the manifest or index it points
// at.
type Image struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}
