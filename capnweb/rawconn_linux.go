package capnweb

import (
	"io"
	"net"
	"os"
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
	return &rawConn{Conn: c, rc: rc}
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
	var n int
	var errno syscall.Errno
	waited := false
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				if !waited && c.idle != nil {
					waited = true
					c.idle()
				}
				return false // wait until the socket is readable
			}
			n, errno = int(r), e
			return true
		}
	})
	if waited && c.busy != nil {
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
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return true // full: the caller decides whether to wait
			case 0:
				n = int(r)
			default:
				errno = e
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, c.opError("write", errno)
	}
	return n, nil
}

// opError describes a failed system call as the net package does.
func (c *rawConn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
