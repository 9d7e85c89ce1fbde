package capnweb

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// rawConn is a server's TCP connection read and written with non-blocking system calls made
// without the Go scheduler's syscall bookkeeping, and which tells the session when its reader is
// about to wait for the peer (see onReadWait).
//
// Why: a session answering one call at a time goes idle between calls, and the first
// syscall.Syscall after an idle spell wakes the runtime's sysmon thread, which then polls every
// 20 µs until the process idles again; with the thread switches this costs more than the call
// itself. The socket is non-blocking (the net package makes it so), so a read or write never
// blocks in the kernel and needs no handing off of its P: syscall.RawSyscall is enough, and
// waiting for the socket still goes through the network poller (syscall.RawConn), deadlines
// and Close included.
type rawConn struct {
	net.Conn
	rc         syscall.RawConn
	idle, busy func() // see onReadWait; nil until set

	// The state of the Read in progress (one at a time: the session reads from one goroutine)
	// and of the tryWrite in progress (one at a time: wmu), kept here so that the functions
	// passed to rc are made once rather than as closures per call.
	readFn, writeFn func(fd uintptr) bool
	wmu             sync.Mutex
	rp, wp          []byte
	rn, wn          int
	rerr, werr      syscall.Errno
	waited          bool
}

// newRawConn wraps c if it is a plain TCP connection; otherwise (TLS, a test's pipe) it
// returns nil.
func newRawConn(c net.Conn) *rawConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	c2 := &rawConn{Conn: c, rc: rc}
	c2.readFn, c2.writeFn = c2.readOnce, c2.writeOnce
	return c2
}

// onReadWait sets the functions called when a Read finds no data and is about to wait for the
// peer (idle), and when the wait is over (busy). It must be called before the first Read.
func (c *rawConn) onReadWait(idle, busy func()) { c.idle, c.busy = idle, busy }

// Read reads what the socket holds, up to len(p) bytes, waiting for the peer if it holds
// nothing.
func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rp, c.rn, c.rerr, c.waited = p, 0, 0, false
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rp = nil
	if c.waited && c.busy != nil {
		c.busy()
	}
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readOnce is Read's function for rc.Read: one read, or false to wait for the socket.
func (c *rawConn) readOnce(fd uintptr) bool {
	n, e := rawIO(syscall.SYS_READ, fd, c.rp)
	if e == syscall.EAGAIN {
		if !c.waited && c.idle != nil {
			c.waited = true
			c.idle()
		}
		return false // wait until the socket is readable
	}
	c.rn, c.rerr = n, e
	return true
}

// rawIO makes one read or write system call (trap) on fd with p, repeated while interrupted.
func rawIO(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		r, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(r), e
		}
	}
}

// Write writes p, waiting for room in the socket's buffer if needed.
func (c *rawConn) Write(p []byte) (int, error) {
	n, err := c.tryWrite(p)
	if err != nil || n == len(p) {
		return n, err
	}
	m, err := c.Conn.Write(p[n:])
	return n + m, err
}

// tryWrite writes as much of p as the socket's buffer takes at once, without waiting.
func (c *rawConn) tryWrite(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.wmu.Lock()
	c.wp, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werr
	c.wp = nil
	c.wmu.Unlock()
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, c.opError("write", errno)
	}
	return n, nil
}

// writeOnce is tryWrite's function for rc.Write: one write, never waiting.
func (c *rawConn) writeOnce(fd uintptr) bool {
	switch n, e := rawIO(syscall.SYS_WRITE, fd, c.wp); e {
	case 0:
		c.wn = n
	case syscall.EAGAIN: // full: the caller decides whether to wait
	default:
		c.werr = e
	}
	return true
}

// opError describes a failed system call as the net package does.
func (c *rawConn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
