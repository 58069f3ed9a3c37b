package harness

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// DBProxy stands between the processes and Postgres, so a test can take
// the database away from them (every connection cut, new ones refused) and
// give it back, without touching the machine's shared Postgres.
type DBProxy struct {
	// DirectURL is the database itself, not through the proxy: for a
	// process the test means to keep while the others lose the database.
	DirectURL string

	ln     net.Listener
	target string

	mu      sync.Mutex
	down    bool
	stalled bool
	flowing *sync.Cond // broadcast when stalled or down changes
	conns   map[net.Conn]struct{}
}

// newDBProxy listens on loopback and forwards to databaseURL's host. It
// returns the proxy and databaseURL pointing at it.
func newDBProxy(t testing.TB, databaseURL string) (*DBProxy, string) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &DBProxy{DirectURL: databaseURL, ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.flowing = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.SetDown(true)
	})
	u.Host = ln.Addr().String()
	return p, u.String()
}

// SetDown cuts every open connection and refuses new ones (true), or
// forwards again (false).
func (p *DBProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	p.flowing.Broadcast()
	if down {
		for c := range p.conns {
			c.Close()
		}
	}
}

// SetStalled makes the proxy a database that stops answering (true): it
// still accepts connections, but forwards nothing either way, on new and
// open connections alike, until set back (false).
func (p *DBProxy) SetStalled(stalled bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = stalled
	p.flowing.Broadcast()
}

// waitFlowing blocks while the proxy is stalled; false once it is down.
func (p *DBProxy) waitFlowing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.stalled && !p.down {
		p.flowing.Wait()
	}
	return !p.down
}

func (p *DBProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *DBProxy) forward(client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	if !p.waitFlowing() {
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && (!p.waitFlowing() || writeAll(dst, buf[:n]) != nil) {
				return
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done // one side ended: end both
}

func writeAll(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}

func (p *DBProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *DBProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}
