// Package flagutil holds command-line helpers shared by minikubelet's
// commands: kubelet-style help output (--flag, one flag per paragraph) and
// the registration of klog's verbosity flags without its file-logging ones.
package flagutil
