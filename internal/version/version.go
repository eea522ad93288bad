package version

// Version is written only by the linker.
var Version = "v0.0.0-dev"
