// Package apparmor reads a pod's AppArmor profiles as the kubelet does:
// the securityContext.appArmorProfile fields of the container and the pod,
// and the deprecated container.apparmor.security.beta.kubernetes.io/<name>
// annotations (which static pods may still carry), and tells whether the
// host can enforce them.
//
// Data enters as a pod and leaves as the profile of each container
// (Profile), whether the pod needs AppArmor at all (Required), and the
// host's support (HostSupport reads /sys once per call). Pure but for
// HostSupport; safe for concurrent use.
package apparmor
