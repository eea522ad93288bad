// Package atomicfile writes a file so that a reader, or a crash, sees the
// old content or the new one, never a part: the data goes to a temporary
// file in the same directory, is synced, and is renamed over the target.
package atomicfile
