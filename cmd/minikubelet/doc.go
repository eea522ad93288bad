// Command minikubelet is a minimal kubelet: it runs the static pods of a
// manifest directory in a CRI runtime such as containerd.
//
//	minikubelet [run] [flags]   run the agent (the default)
//	minikubelet version         print the version
//
// main only parses flags, sets up signal handling and calls agent.Run.
package main
