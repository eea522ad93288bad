//go:build race

package manifest

// raceDetector is true in a build with the race detector, which slows the
// code down several times.
const raceDetector = true
