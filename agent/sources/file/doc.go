// Package file is the static pod file source: it watches one directory of
// manifests (the kubelet's staticPodPath, /etc/kubernetes/manifests by
// default) and sends the pods they define.
//
// It owns the reading of that directory: which names are manifests (*.yaml,
// *.yml, *.json; dotfiles and editor temporaries ignored; symlinks
// followed), when to read them again (fsnotify events at once, a full rescan
// every CheckFrequency as a safety net, a missing directory re-checked each
// CheckFrequency), and the memory of each file's last good pod, so that a
// manifest that turns bad never stops a pod that runs from its earlier good
// version (DESIGN.md rule 5).
//
// Data enters from the file system and leaves as sources.Update values on
// the channel given to Run: one complete snapshot (Source "file") after the
// first scan, even of an empty or missing directory, and then one whenever
// the set of pods or of errors changes, never a repeat of the last one. Pods
// come from manifest.Load, so they carry their static identity: a pod's UID
// depends on the file's path, not its content, and an edit is an UPDATE.
//
// A file that vanishes keeps its pod for RecreateWindow (500ms): a file
// created at the same path within the window (`git checkout`, `rm f && cp
// g f`, a delete-then-write, a directory swapped for a new one) is read as
// an edit of the old one, so the agent sees an UPDATE of the same pod, or
// nothing when the content is the same, never a REMOVE and an ADD. A real
// deletion is sent once the window has passed.
//
// Changes made through a symlink's target outside the directory raise no
// event in it; the periodic rescan picks them up.
package file
