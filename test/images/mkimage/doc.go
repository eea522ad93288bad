// Command mkimage writes a single-layer OCI image layout tarball
// (oci-layout, index.json, blobs/sha256/...) from a list of files, symlinks
// and directories given as flags, with no registry, daemon or root needed.
//
// Data enters only through flags and the source files named by -file; it
// leaves as one tarball written atomically to -o. The output is
// deterministic: tar entries are sorted, owned by 0:0 and carry one fixed
// mtime, gzip carries no name or time, and the image config carries a fixed
// creation time, so the same inputs (and Go toolchain) give byte-identical
// output. test/scripts/prepare.sh relies on that to rebuild images only
// when their sources change.
//
// Each -ref names the image once more: one index.json entry per name, all
// pointing at the one manifest. Each entry carries both
// io.containerd.image.name (the full reference) and
// org.opencontainers.image.ref.name (the tag), the way containerd's own
// exporter writes them, so that "ctr images import" names the image after
// the full reference on containerd 1.6 and 2.x alike.
//
// Example:
//
//	mkimage -ref localhost/minikubelet/busybox:1.35 -o busybox.tar \
//	  -file /bin/busybox=/bin/busybox:0755 -symlink /bin/sh=busybox \
//	  -dir /tmp:1777 -env PATH=/bin -cmd sh
package main
