package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// TCP connects to host:port and closes the connection at once: a
// connection made before ctx ends is Success, anything else Failure.
func TCP(ctx context.Context, host string, port int) (Result, string) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Failure, fmt.Sprintf("dial tcp %s: %v", addr, err)
	}
	_ = conn.Close()
	return Success, ""
}
