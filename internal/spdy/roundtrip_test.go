package spdy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/streaming/pkg/httpstream"
	kspdy "k8s.io/streaming/pkg/httpstream/spdy"
)

// dialTest is a DialFunc: the request on a new TCP connection, and the
// answer's head.
func dialTest(req *http.Request) (*Upgrade, error) {
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		return nil, err
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	buffered, _ := br.Peek(br.Buffered())
	return &Upgrade{Resp: resp, Conn: conn, Buffered: buffered}, nil
}

// The round tripper upgrades a request to a server that upgrades as the
// runtime's streaming server does (k8s.io/streaming's upgrader), and
// relays a refusal as client-go's round tripper does.
func TestRoundTripper(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"kind":"Status","message":"not for you"}`)
			return
		}
		conn := kspdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			go func() {
				_, _ = io.Copy(s, s)
				_ = s.Close()
			}()
			return nil
		})
		if conn != nil {
			<-conn.CloseChan()
		}
	}))
	defer ts.Close()

	t.Run("upgrade", func(t *testing.T) {
		rt := NewRoundTripper(dialTest, Config{})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rt.NewConnection(resp)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		st, err := c.CreateStream(http.Header{"Streamtype": {"stdin"}})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = io.WriteString(st, "round trip")
			_ = st.Close()
		}()
		if got, err := io.ReadAll(st); err != nil || string(got) != "round trip" {
			t.Errorf("echo: %q, %v", got, err)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		var conn net.Conn
		rt := NewRoundTripper(func(req *http.Request) (*Upgrade, error) {
			up, err := dialTest(req)
			if up != nil {
				conn = up.Conn
			}
			return up, err
		}, Config{})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/refuse", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rt.NewConnection(resp)
		if err == nil || err.Error() != "unable to upgrade connection: not for you" {
			t.Errorf("NewConnection: %v, want the server's message", err)
		}
		if _, err := conn.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("the connection of a refusal is still open: %v", err)
		}
	})
	t.Run("foreign answer", func(t *testing.T) {
		rt := NewRoundTripper(dialTest, Config{})
		if _, err := rt.NewConnection(&http.Response{}); err == nil {
			t.Error("NewConnection of an answer it did not make: no error")
		}
	})
}
