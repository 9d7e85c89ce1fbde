//go:build wasip1

// Command guest is the bindgen round-trip guest (wit/roundtrip.wit). It is written only
// against the generated bindings in ./bindings: every exported echo-T passes its argument to
// the host's echo-T and returns the host's answer, so one call moves a T host -> guest (export
// argument), guest -> host (import argument), host -> guest (import result) and guest -> host
// (export result). Regenerate the bindings with `go test ./tests/bindgen -run
// TestBindingsUpToDate -update`.
package main

import (
	"fmt"
	"strings"

	b "atelier/tests/bindgen/guest/bindings"
)

func main() {}

func init() {
	b.ExportGuest(guest{})
	b.Export(world{})
}

type world struct{}

func (world) Ping(n uint32) string { return strings.Repeat("pong ", int(n)) }

// counter is the guest's implementation of the exported resource.
type counter struct{ n uint32 }

func (c *counter) Get() uint32   { return c.n }
func (c *counter) Add(by uint32) { c.n += by }
func (c *counter) Drop()         { dropped++ }

var dropped uint32

type guest struct{}

func (guest) NewCounter(n uint32) b.Counter  { return &counter{n: n} }
func (guest) CounterMake(n uint32) b.Counter { return &counter{n: n * 10} }
func (guest) Consume(c b.Counter) uint32     { return c.Get() }
func (guest) Peek(c b.Counter) uint32        { return c.Get() }
func (guest) Dropped() uint32                { return dropped }

func (guest) EchoBool(x bool) bool                 { return b.HostEchoBool(x) }
func (guest) EchoS8(x int8) int8                   { return b.HostEchoS8(x) }
func (guest) EchoU8(x uint8) uint8                 { return b.HostEchoU8(x) }
func (guest) EchoS16(x int16) int16                { return b.HostEchoS16(x) }
func (guest) EchoU16(x uint16) uint16              { return b.HostEchoU16(x) }
func (guest) EchoS32(x int32) int32                { return b.HostEchoS32(x) }
func (guest) EchoU32(x uint32) uint32              { return b.HostEchoU32(x) }
func (guest) EchoS64(x int64) int64                { return b.HostEchoS64(x) }
func (guest) EchoU64(x uint64) uint64              { return b.HostEchoU64(x) }
func (guest) EchoF32(x float32) float32            { return b.HostEchoF32(x) }
func (guest) EchoF64(x float64) float64            { return b.HostEchoF64(x) }
func (guest) EchoChar(x rune) rune                 { return b.HostEchoChar(x) }
func (guest) EchoString(x string) string           { return b.HostEchoString(x) }
func (guest) EchoBytes(x []byte) []byte            { return b.HostEchoBytes(x) }
func (guest) EchoStrings(x []string) []string      { return b.HostEchoStrings(x) }
func (guest) EchoPoint(x b.Point) b.Point          { return b.HostEchoPoint(x) }
func (guest) EchoShape(x b.Shape) b.Shape          { return b.HostEchoShape(x) }
func (guest) EchoColor(x b.Color) b.Color          { return b.HostEchoColor(x) }
func (guest) EchoOption(x *uint32) *uint32         { return b.HostEchoOption(x) }
func (guest) EchoOptionOption(x **string) **string { return b.HostEchoOptionOption(x) }
func (guest) EchoPerms(x b.Perms) b.Perms          { return b.HostEchoPerms(x) }
func (guest) EchoWide(x b.Wide) b.Wide             { return b.HostEchoWide(x) }
func (guest) EchoItem(x b.Item) b.Item             { return b.HostEchoItem(x) }
func (guest) EchoItems(x []b.Item) []b.Item        { return b.HostEchoItems(x) }
func (guest) EchoMany(x b.Many) b.Many             { return b.HostEchoMany(x) }
func (guest) EchoMixed(x b.Mixed) b.Mixed          { return b.HostEchoMixed(x) }
func (guest) EchoNested(x b.Nested) b.Nested       { return b.HostEchoNested(x) }
func (guest) EchoWords(x b.Words) b.Words          { return b.HostEchoWords(x) }

func (guest) EchoTuple(x b.Tuple3[uint32, string, bool]) b.Tuple3[uint32, string, bool] {
	return b.HostEchoTuple(x)
}

func (guest) EchoResult(x b.Result[string, uint32]) (string, error) { return b.HostEchoResult(x) }
func (guest) EchoResultEmpty(x b.Result[struct{}, struct{}]) error  { return b.HostEchoResultEmpty(x) }

func (guest) EchoSpill(a, b2, c, d, e, f, g, h uint64, i, j, k, l string) b.Tuple2[uint64, string] {
	return b.HostEchoSpill(a, b2, c, d, e, f, g, h, i, j, k, l)
}

func (guest) Lookup(key string) (b.Point, error) { return b.HostLookup(key) }

// Describe renders x with the Go types the bindings gave it.
func (guest) Describe(x b.Item) string {
	score := "none"
	if x.Score != nil {
		score = fmt.Sprint(*x.Score)
	}
	kind := x.Kind.Tag.String()
	switch x.Kind.Tag {
	case b.ShapeCircle:
		kind += fmt.Sprintf("(%g)", x.Kind.Circle)
	case b.ShapeRect:
		kind += fmt.Sprintf("(%d,%d,%s)", x.Kind.Rect.X, x.Kind.Rect.Y, x.Kind.Rect.Label)
	case b.ShapeNamed:
		kind += "(" + x.Kind.Named + ")"
	}
	return fmt.Sprintf("%s [%s] count=%d perms=%s score=%s kind=%s", x.Title, strings.Join(x.Tags, ","), x.Count, x.Perms, score, kind)
}

// UseFiles uses every function of the host's file resource and reports what it saw.
func (guest) UseFiles(text string) []string {
	var seen []string
	f := b.NewFile(text)
	seen = append(seen, "new: "+f.Read())
	f.Append("+more")
	seen = append(seen, "append: "+f.Read())
	both := f.Concat(f) // self and other borrow the same file
	seen = append(seen, "concat: "+both.Read())
	if _, err := b.FileOpen("missing"); err != nil {
		seen = append(seen, "open missing: "+err.Error())
	}
	readme, err := b.FileOpen("readme")
	if err != nil {
		return append(seen, "open readme: "+err.Error())
	}
	seen = append(seen, "open readme: "+readme.Read())
	for i, m := range b.FileMany([]string{"one", "two"}) {
		seen = append(seen, fmt.Sprintf("many[%d]: %s", i, m.Read()))
		m.Drop()
	}
	back := b.HostPass(both) // own out and back: `both` is gone, `back` is the same file
	seen = append(seen, "pass: "+back.Read())
	seen = append(seen, "close: "+b.HostCloseFile(back)) // own out: the host ends it
	f.Drop()
	readme.Drop()
	return seen
}

// KeepFile makes a file and never drops it.
func (guest) KeepFile(text string) { kept = append(kept, b.NewFile(text)) }

var kept []b.File
