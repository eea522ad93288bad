// Package config is the agent's configuration: the kubelet's flags
// (AddFlags), the KubeletConfiguration file named by --config (LoadFile,
// file.go; a flag given on the command line wins), their checks
// (Validate, check.go) and defaults (Default), and node mode's settings
// (NodeConfig, node.go).
//
// Data enters as command-line arguments parsed into a Config by the flag
// set AddFlags fills, and as the bytes of the config file; it leaves as a
// Config value the agent is built from. Nothing here reads the node
// beyond its hostname (NodeName) or keeps state between calls. Every
// mistake is an error naming the flag or the file and field, and what
// would be right.
package config
