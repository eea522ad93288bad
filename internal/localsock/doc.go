// Package localsock is the agent's local Unix socket, through which root
// on the node uses every endpoint without TLS or credentials (the
// `minikubelet` command line does): where it is by default, how the agent
// listens on it, and how a client reaches it.
//
// Listen makes the socket's directory (root-owned, mode 0700; an existing
// one must be owned by the agent's user and writable by no one else),
// replaces a stale socket and refuses a live one, and makes the socket
// mode 0600. Each accepted connection carries its peer's credentials,
// read once with SO_PEERCRED; RootOnly answers 403 to a request whose
// connection is not root's (nor the agent's own user's), so the check
// holds even if the file's permissions were loosened. Transport dials the
// socket for an http.Client.
package localsock
