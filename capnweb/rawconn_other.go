//go:build !linux

package capnweb

import "net"

// rawConn stands for the Linux connection wrapper (rawconn_linux.go); elsewhere connections
// are never wrapped, so none of its methods is reached.
type rawConn struct{ net.Conn }

func newRawConn(net.Conn) *rawConn { return nil }

func (c *rawConn) onReadWait(idle, busy func()) {}

func (c *rawConn) tryWrite(p []byte) (int, error) { return 0, nil }
