//go:build wasip1

// Command net-escape is a test guest that tries net.Dial. Go's wasip1 port has no socket
// support beyond preopened listeners, so the dial must fail inside the guest; the component
// imports no wasi:sockets interface at all (see ../sockets-import for a guest that does).
package main

import (
	"net"

	"atelier/sdk/go/cabi"
)

func main() {}

//go:wasmexport dial
func dial(ptr, n uint32) uint32 {
	conn, err := net.Dial("tcp", cabi.TakeString(ptr, n))
	if err != nil {
		return cabi.ReturnResultString("", err)
	}
	defer conn.Close()
	return cabi.ReturnResultString(conn.RemoteAddr().String(), nil)
}
