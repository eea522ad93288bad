// Package imageimport imports image archives from a directory into the
// container runtime, so that an air-gapped node runs pods whose images no
// registry serves: the agent calls ImportRootDir, which runs ImportAll on
// <root-dir>/images, at start, before any pod is synced.
//
// Every regular file *.tar in the directory (not a dot file: copy an
// archive in under a dot name and rename it) is an OCI image layout or a
// docker-save tarball, plain or gzip-compressed. Its images are named by
// the io.containerd.image.name annotation of index.json, else by an
// org.opencontainers.image.ref.name that is a full reference, or by
// docker's RepoTags; they are imported into containerd's k8s.io namespace
// (the CRI's) and unpacked for containerd's default snapshotter, so that
// pods with imagePullPolicy IfNotPresent or Never find them. CRI has no
// import verb, so the Store is containerd's own gRPC API (Containerd:
// the content, images, leases, diff and snapshots services, v1, which
// containerd 1.6 and 2.x serve on CRI's socket). It does what containerd's
// Go client does for "ctr images import", without linking that client,
// most of four MiB of every node's resident binary.
//
// Restarts are cheap: the digest of an archive's index files (index.json,
// manifest.json; they pin every blob) is read from the tar headers
// without reading the layers, and an archive whose digest matches the one
// recorded at its last import (Config.StatePath) is skipped if the images
// it named then are still there. An archive that is not an image archive,
// names no image or fails to import is logged with the file and the
// cause and skipped; the others are imported all the same.
//
// Data enters from the directory and the state file; it leaves through
// the Store, the state file and log lines.
package imageimport
