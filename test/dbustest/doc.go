// Package dbustest runs a private system bus for tests, with Debian's real
// systemd-logind on it, and a stand-in for the one thing this machine lacks:
// systemd as PID 1, which logind asks to power the machine off.
//
// StartDaemon runs dbus-daemon on a socket in a temp dir with a permissive
// policy. StartLogind runs /lib/systemd/systemd-logind on that bus in a
// mount namespace of its own, where /run/systemd is a fresh tmpfs (it reads
// and writes none of the host's logind state) and /etc/systemd is a
// directory of the test's (the drop-ins written there are the ones it
// reads; its logind.conf keeps logind off the host's consoles and keys).
// Logind does not reconnect to a restarted bus: Daemon.Restart is followed
// by Logind.Restart. ServeSystemd owns org.freedesktop.systemd1 on the bus: it answers
// logind's questions about units, records logind's StartUnit (the moment it
// goes on with a shutdown once every delay lock is released), relays
// KillUnit of systemd-logind.service as a signal to the logind process, and
// ends the shutdown job on request, on which logind sends
// PrepareForShutdown(false). Nothing is ever powered off: StartUnit only
// records.
//
// Every process is started with its cleanup registered at once (SIGKILL by
// PID, then wait), so a failing test leaves none behind.
package dbustest
