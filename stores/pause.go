package stores

import (
	"context"
	"net"
	"sync"
)

// Pauser opens connections that it can freeze and thaw together: a frozen
// connection neither sends nor delivers a byte, but stays open, as the
// sockets of a stopped process do (the kernel still acknowledges what
// arrives). Whatever was written during the freeze goes out at the thaw,
// so the stream stays intact: a client library on top carries on as a
// process resumed from a long GC pause would.
type Pauser struct {
	dial DialFunc

	mu     sync.Mutex
	thawed chan struct{} // closed while not frozen
}

// NewPauser wraps dial (nil: a direct dial).
func NewPauser(dial DialFunc) *Pauser {
	p := &Pauser{dial: dial, thawed: make(chan struct{})}
	close(p.thawed)
	return p
}

// Dial opens a connection that freezes with the pauser.
func (p *Pauser) Dial(ctx context.Context, addr string) (net.Conn, error) {
	if err := p.wait(ctx.Done()); err != nil {
		return nil, err
	}
	var c net.Conn
	var err error
	if p.dial != nil {
		c, err = p.dial(ctx, addr)
	} else {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	return &pausedConn{Conn: c, p: p, closed: make(chan struct{})}, nil
}

// Freeze stops every connection's traffic until Thaw.
func (p *Pauser) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default:
	}
}

// Thaw lets traffic flow again.
func (p *Pauser) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// wait blocks while frozen, until stop is closed.
func (p *Pauser) wait(stop <-chan struct{}) error {
	p.mu.Lock()
	thawed := p.thawed
	p.mu.Unlock()
	select {
	case <-thawed:
		return nil
	case <-stop:
		return net.ErrClosed
	}
}

type pausedConn struct {
	net.Conn
	p      *Pauser
	once   sync.Once
	closed chan struct{}
}

// Read delivers nothing while frozen, including what a read already under
// way returns.
func (c *pausedConn) Read(b []byte) (int, error) {
	if err := c.p.wait(c.closed); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	if werr := c.p.wait(c.closed); werr != nil && err == nil {
		err = werr
	}
	return n, err
}

func (c *pausedConn) Write(b []byte) (int, error) {
	if err := c.p.wait(c.closed); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *pausedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
