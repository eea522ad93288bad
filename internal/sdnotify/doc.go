// Package sdnotify speaks systemd's service notification protocol
// (sd_notify(3)) without libsystemd: a service started with Type=notify
// tells its service manager that it is ready (READY=1), what it is doing
// (STATUS=...), that it is alive (WATCHDOG=1) and that it is stopping
// (STOPPING=1), each message one datagram of newline-separated KEY=VALUE
// lines sent to the unix socket named by $NOTIFY_SOCKET. A name that starts
// with '@' is a socket in the abstract namespace.
//
// FromEnv reads the environment the manager sets ($NOTIFY_SOCKET,
// $WATCHDOG_USEC, $WATCHDOG_PID) once; Notifier then holds no other state
// and owns no goroutine. Deciding what to send and when is the caller's.
package sdnotify
