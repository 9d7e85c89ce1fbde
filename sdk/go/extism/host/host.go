//go:build wasip1

// Package host is the kv and log part of atelier/sdk/go/host for gatekeepers built as Extism
// plugins: the same functions, over Atelier's host functions kv_get, kv_set, kv_delete and
// log (extism:host/user). Errors of the host are *extism.Error values.
package host

import (
	"atelier/sdk/go/extism"
	"atelier/sdk/go/loglevel"
)

//go:wasmimport extism:host/user kv_get
func hostKVGet(req uint64) uint64

//go:wasmimport extism:host/user kv_set
func hostKVSet(req uint64) uint64

//go:wasmimport extism:host/user kv_delete
func hostKVDelete(req uint64) uint64

//go:wasmimport extism:host/user log
func hostLog(req uint64) uint64

// Get returns the value stored under key and whether it exists.
func Get(key string) ([]byte, bool, error) {
	var v *struct {
		Value []byte `json:"value"`
	}
	if err := extism.CallHost("kv_get", hostKVGet, map[string]string{"key": key}, &v); err != nil || v == nil {
		return nil, false, err
	}
	return v.Value, true, nil
}

// Set stores value under key.
func Set(key string, value []byte) error {
	return extism.CallHost("kv_set", hostKVSet, map[string]any{"key": key, "value": value}, nil)
}

// Delete removes key; a missing key is not an error.
func Delete(key string) error {
	return extism.CallHost("kv_delete", hostKVDelete, map[string]string{"key": key}, nil)
}

// Level is the severity of a console line.
type Level = loglevel.Level

// The levels, as in atelier/sdk/go/host.
const (
	Debug = loglevel.Debug
	Info  = loglevel.Info
	Warn  = loglevel.Warn
	Error = loglevel.Error
)

// Log appends message to the gatekeeper's console log; a level above Error is logged as
// Error. A line the host refuses is dropped, as in atelier/sdk/go/host.
func Log(level Level, message string) {
	extism.CallHost("log", hostLog, map[string]string{"level": level.String(), "message": message}, nil)
}
