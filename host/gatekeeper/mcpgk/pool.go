package mcpgk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/host/capability/outboundhttp"
)

// Defaults of the connection cache (Config.IdleTimeout, Config.MaxIdle).
const (
	DefaultIdleTimeout = 2 * time.Minute
	DefaultMaxIdle     = 16
)

// errPoolClosed is what a call gets once the gatekeeper is closed.
var errPoolClosed = errors.New("the MCP gatekeeper is closed")

// errAccountClosed is what a call of an instance gets once its account was disconnected.
var errAccountClosed = errors.New("the MCP account was disconnected; connect it again")

// pool caches one connection per account, shared by the account's instances (a gadget
// binding's, a snippet's two, an approval's): an entry lives while an instance of its account
// is open and IdleTimeout after the last one closed; at most MaxIdle entries wait idle (the
// least recently used goes first). The key is the account with its resource and credential
// headers, so that a changed credential gets a connection of its own (the old one is closed
// once idle). It is safe for concurrent use.
type pool struct {
	idle    time.Duration
	maxIdle int

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool

	connects atomic.Int64 // connections made, for tests
}

// entry is the cached connection of one key.
type entry struct {
	key, account string

	connMu sync.Mutex // held while connecting
	cmu    sync.Mutex // guards conn
	conn   *conn
	gone   atomic.Bool // removed from the pool: its connection is closed, calls are refused
	reason error       // why it is gone (set before gone)

	refs      int // open instances (pool.mu)
	idleSince time.Time
	timer     *time.Timer
}

func newPool(idle time.Duration, maxIdle int) *pool {
	return &pool{idle: idle, maxIdle: maxIdle, entries: map[string]*entry{}}
}

// poolKey is the key of an account's connection: its name, resource and credential headers
// (hashed: the key is not a place for secrets).
func poolKey(account, resource string, headers []outboundhttp.Header) string {
	h := sha256.New()
	for _, s := range []string{account, resource} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, hd := range headers {
		h.Write([]byte(hd.Name))
		h.Write([]byte{0})
		h.Write([]byte(hd.Value))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// acquire returns the entry of key for a new instance of account. An idle entry of the same
// account under another key (its credential changed) is closed.
func (p *pool) acquire(key, account string) (*entry, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	e := p.entries[key]
	if e == nil {
		e = &entry{key: key, account: account}
		p.entries[key] = e
	}
	e.refs++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	var stale []*entry
	for k, o := range p.entries {
		if o.account == account && k != key && o.refs == 0 {
			stale = append(stale, p.removeLocked(o))
		}
	}
	p.mu.Unlock()
	closeAll(stale, errAccountClosed, false)
	return e, nil
}

// release ends an instance's use of e: the last one leaves it idle (or closes it when
// nothing is kept idle), and the idle entries past MaxIdle are closed, oldest first.
func (p *pool) release(e *entry) {
	p.mu.Lock()
	e.refs--
	if e.refs > 0 || p.entries[e.key] != e {
		p.mu.Unlock()
		return
	}
	var drop []*entry
	if p.idle <= 0 || p.maxIdle <= 0 {
		drop = append(drop, p.removeLocked(e))
	} else {
		e.idleSince = time.Now()
		e.timer = time.AfterFunc(p.idle, func() { p.expire(e) })
		for {
			var oldest *entry
			n := 0
			for _, o := range p.entries {
				if o.refs == 0 {
					n++
					if oldest == nil || o.idleSince.Before(oldest.idleSince) {
						oldest = o
					}
				}
			}
			if n <= p.maxIdle {
				break
			}
			drop = append(drop, p.removeLocked(oldest))
		}
	}
	p.mu.Unlock()
	closeAll(drop, errPoolClosed, false)
}

// expire closes e when it is still idle IdleTimeout after its last instance closed.
func (p *pool) expire(e *entry) {
	p.mu.Lock()
	if e.refs > 0 || p.entries[e.key] != e {
		p.mu.Unlock()
		return
	}
	p.removeLocked(e)
	p.mu.Unlock()
	closeAll([]*entry{e}, errPoolClosed, false)
}

// removeLocked takes e out of the pool (p.mu held) and returns it.
func (p *pool) removeLocked(e *entry) *entry {
	delete(p.entries, e.key)
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	return e
}

// closeAccount closes the connections of account, in use or not: its instances' next calls
// are refused.
func (p *pool) closeAccount(account string) {
	p.mu.Lock()
	var drop []*entry
	for _, e := range p.entries {
		if e.account == account {
			drop = append(drop, p.removeLocked(e))
		}
	}
	p.mu.Unlock()
	closeAll(drop, errAccountClosed, false)
}

// close closes every connection and refuses new instances; it returns once the connections
// are closed (a stdio server's process has ended).
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	var drop []*entry
	for _, e := range p.entries {
		drop = append(drop, p.removeLocked(e))
	}
	p.mu.Unlock()
	closeAll(drop, errPoolClosed, true)
}

// size returns the number of entries and of live connections, for tests.
func (p *pool) size() (entries, conns int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.entries {
		e.cmu.Lock()
		if e.conn != nil {
			conns++
		}
		e.cmu.Unlock()
	}
	return len(p.entries), conns
}

// closeAll marks the entries gone with reason and closes their connections: in the
// background (closing waits for calls in flight) unless wait.
func closeAll(es []*entry, reason error, wait bool) {
	var wg sync.WaitGroup
	for _, e := range es {
		e.reason = reason
		e.gone.Store(true)
		e.cmu.Lock()
		cn := e.conn
		e.conn = nil
		e.cmu.Unlock()
		if cn != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cn.close()
			}()
		}
	}
	if wait {
		wg.Wait()
	}
}

// get returns e's live connection, connecting with connect when there is none or it ended.
func (e *entry) get(ctx context.Context, connect func(context.Context) (*conn, error)) (*conn, error) {
	if e.gone.Load() {
		return nil, e.reason
	}
	e.cmu.Lock()
	cn := e.conn
	e.cmu.Unlock()
	if cn != nil && !cn.ended() {
		return cn, nil
	}
	e.connMu.Lock()
	defer e.connMu.Unlock()
	e.cmu.Lock()
	cn = e.conn
	e.cmu.Unlock()
	if cn != nil && !cn.ended() {
		return cn, nil // another call connected meanwhile
	}
	if cn != nil {
		e.drop(cn)
	}
	cn, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	e.cmu.Lock()
	if e.gone.Load() {
		e.cmu.Unlock()
		go cn.close()
		return nil, e.reason
	}
	e.conn = cn
	e.cmu.Unlock()
	return cn, nil
}

// drop closes cn (in the background: closing waits for calls in flight) and forgets it if it
// is still e's connection, so that the next call connects again.
func (e *entry) drop(cn *conn) {
	e.cmu.Lock()
	if e.conn == cn {
		e.conn = nil
	}
	e.cmu.Unlock()
	go cn.close()
}

// conn is a live client session on the server, with its tools by method name.
type conn struct {
	cs     *gomcp.ClientSession
	tools  map[string]*gomcp.Tool
	server string        // the server's name and version, for declarations
	done   chan struct{} // closed once the session ended (the server went away, or close)
	once   sync.Once
}

// newConn wraps cs and watches for its end.
func newConn(cs *gomcp.ClientSession) *conn {
	cn := &conn{cs: cs, tools: map[string]*gomcp.Tool{}, done: make(chan struct{})}
	go func() {
		cs.Wait()
		close(cn.done)
	}()
	return cn
}

// ended reports whether the session has ended.
func (cn *conn) ended() bool {
	select {
	case <-cn.done:
		return true
	default:
		return false
	}
}

// close closes the session (a stdio server's process ends); it waits for calls in flight.
func (cn *conn) close() {
	cn.once.Do(func() { cn.cs.Close() })
}
