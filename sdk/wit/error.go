package wit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is a position in a WIT source file. Line and Column count from 1; Column counts bytes.
// The zero Pos is "no position".
type Pos struct {
	File   string
	Line   int
	Column int
}

// String renders p as file:line:column.
func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Error is a syntax or resolution error at a position in a WIT file.
type Error struct {
	Pos Pos
	Msg string
}

// Error renders e as "file:line:column: message".
func (e *Error) Error() string {
	if e.Pos == (Pos{}) {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// ErrorList is every error a Load or Resolve found, in file and position order. It is returned
// as an error only when it is not empty.
type ErrorList []*Error

// maxErrors bounds how many errors one run reports.
const maxErrors = 20

// Error renders the errors one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sorted returns l ordered by file, line and column, keeping the first of identical errors.
func (l ErrorList) sorted() ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Column, b.Pos.Column))
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// errorf builds an *Error at pos.
func errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
