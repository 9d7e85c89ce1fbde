package wit

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// tokKind is the class of a token.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // an identifier; text holds it without a leading '%'
	tKeyword         // a reserved word
	tInt             // a run of digits
	tPunct           // an operator: = , : ; ( ) { } < > * -> / . @ _
)

// token is one lexical token. docs holds the doc comments (/// and /** */) that came right
// before it, with their markers removed.
type token struct {
	kind    tokKind
	text    string
	pos     Pos
	end     int // byte offset just past the token
	docs    string
	escaped bool // an identifier written with '%'
}

// describe names t for an error message: "',' ", "identifier 'foo'", "end of file".
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tIdent:
		return fmt.Sprintf("identifier '%s'", t.text)
	case tKeyword:
		return fmt.Sprintf("keyword '%s'", t.text)
	case tInt:
		return fmt.Sprintf("integer '%s'", t.text)
	}
	return "'" + t.text + "'"
}

// keywords are the words WIT reserves; they name an identifier only when written with '%'.
var keywords = map[string]bool{
	"as": true, "async": true, "bool": true, "borrow": true, "char": true, "constructor": true,
	"enum": true, "error-context": true, "export": true, "f32": true, "f64": true, "flags": true,
	"from": true, "func": true, "future": true, "import": true,
	"include": true, "interface": true, "list": true, "map": true, "option": true, "own": true,
	"package": true, "record": true, "resource": true, "result": true, "s16": true, "s32": true,
	"s64": true, "s8": true, "static": true, "stream": true, "string": true, "tuple": true,
	"type": true, "u16": true, "u32": true, "u64": true, "u8": true, "use": true, "variant": true,
	"with": true, "world": true,
}

// lexer turns WIT text into tokens on demand.
type lexer struct {
	file  string
	src   string
	off   int
	lines []int // byte offsets at which lines start
}

func newLexer(file string, src []byte) *lexer {
	lx := &lexer{file: file, src: string(src), lines: []int{0}}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			lx.lines = append(lx.lines, i+1)
		}
	}
	return lx
}

// pos converts a byte offset to a Pos.
func (lx *lexer) pos(off int) Pos {
	line := sort.Search(len(lx.lines), func(i int) bool { return lx.lines[i] > off }) - 1
	return Pos{File: lx.file, Line: line + 1, Column: off - lx.lines[line] + 1}
}

// skip passes over whitespace and comments and returns the doc comments it met.
func (lx *lexer) skip() (string, *Error) {
	var docs []string
	for lx.off < len(lx.src) {
		c := lx.src[lx.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			lx.off++
		case strings.HasPrefix(lx.src[lx.off:], "//"):
			end := strings.IndexByte(lx.src[lx.off:], '\n')
			if end < 0 {
				end = len(lx.src) - lx.off
			}
			text := strings.TrimSuffix(lx.src[lx.off:lx.off+end], "\r")
			if strings.HasPrefix(text, "///") && !strings.HasPrefix(text, "////") {
				docs = append(docs, strings.TrimPrefix(text[3:], " "))
			}
			lx.off += end
		case strings.HasPrefix(lx.src[lx.off:], "/*"):
			start := lx.off
			depth := 0
			for {
				switch {
				case lx.off >= len(lx.src):
					return "", errorf(lx.pos(start), "unterminated block comment: expected '*/'")
				case strings.HasPrefix(lx.src[lx.off:], "/*"):
					depth++
					lx.off += 2
					continue
				case strings.HasPrefix(lx.src[lx.off:], "*/"):
					depth--
					lx.off += 2
				default:
					lx.off++
					continue
				}
				if depth == 0 {
					break
				}
			}
			text := lx.src[start:lx.off]
			if strings.HasPrefix(text, "/**") && text != "/**/" && !strings.HasPrefix(text, "/***") {
				docs = append(docs, blockDocs(text[3:len(text)-2])...)
			}
		default:
			return strings.Join(docs, "\n"), nil
		}
	}
	return strings.Join(docs, "\n"), nil
}

// blockDocs returns the lines of a /** */ comment's body without their leading '*' decoration.
func blockDocs(body string) []string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "*") {
			l = strings.TrimPrefix(l[1:], " ")
		}
		lines[i] = l
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// next returns the next token.
func (lx *lexer) next() (token, *Error) {
	docs, err := lx.skip()
	if err != nil {
		return token{}, err
	}
	t := token{pos: lx.pos(lx.off), docs: docs}
	if lx.off >= len(lx.src) {
		t.kind, t.end = tEOF, lx.off
		return t, nil
	}
	c := lx.src[lx.off]
	switch {
	case c == '-' && lx.off+1 < len(lx.src) && lx.src[lx.off+1] == '>':
		t.kind, t.text = tPunct, "->"
		lx.off += 2
	case strings.IndexByte("=,:;(){}<>*/.@_", c) >= 0:
		t.kind, t.text = tPunct, string(c)
		lx.off++
	case c >= '0' && c <= '9':
		start := lx.off
		for lx.off < len(lx.src) && lx.src[lx.off] >= '0' && lx.src[lx.off] <= '9' {
			lx.off++
		}
		t.kind, t.text = tInt, lx.src[start:lx.off]
	case c == '%' || isLetter(c):
		if c == '%' {
			t.escaped = true
			lx.off++
		}
		start := lx.off
		for lx.off < len(lx.src) && (isLetter(lx.src[lx.off]) || isDigit(lx.src[lx.off]) || lx.src[lx.off] == '-' && !strings.HasPrefix(lx.src[lx.off:], "->")) {
			lx.off++
		}
		t.text = lx.src[start:lx.off]
		if msg := checkIdent(t.text); msg != "" {
			return token{}, errorf(t.pos, "invalid identifier '%s': %s", t.text, msg)
		}
		t.kind = tIdent
		if !t.escaped && keywords[t.text] {
			t.kind = tKeyword
		}
	default:
		r, _ := utf8.DecodeRuneInString(lx.src[lx.off:])
		return token{}, errorf(t.pos, "unexpected character %q", r)
	}
	t.end = lx.off
	return t, nil
}

// version scans a semantic version starting at the next non-blank byte. A trailing '.' is
// left unread: it belongs to a `.{` that follows a versioned use path.
func (lx *lexer) version() (string, Pos, *Error) {
	if _, err := lx.skip(); err != nil {
		return "", Pos{}, err
	}
	start := lx.off
	for lx.off < len(lx.src) && (isLetter(lx.src[lx.off]) || isDigit(lx.src[lx.off]) || strings.IndexByte(".-+", lx.src[lx.off]) >= 0) {
		lx.off++
	}
	for lx.off > start && lx.src[lx.off-1] == '.' {
		lx.off--
	}
	v := lx.src[start:lx.off]
	pos := lx.pos(start)
	if msg := checkSemver(v); msg != "" {
		if v == "" {
			return "", pos, errorf(pos, "expected a semantic version (1.2.3), %s", msg)
		}
		return "", pos, errorf(pos, "invalid version '%s': %s", v, msg)
	}
	return v, pos, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// checkIdent returns why s is not a WIT identifier (kebab-case words, each starting with a
// letter and either all lower case or all upper case), or "".
func checkIdent(s string) string {
	if s == "" {
		return "expected a name"
	}
	for word := range strings.SplitSeq(s, "-") {
		if word == "" {
			return "'-' must separate two words"
		}
		if !isLetter(word[0]) {
			return fmt.Sprintf("word '%s' must start with a letter", word)
		}
		lower, upper := false, false
		for i := 0; i < len(word); i++ {
			lower = lower || word[i] >= 'a' && word[i] <= 'z'
			upper = upper || word[i] >= 'A' && word[i] <= 'Z'
		}
		if lower && upper {
			return fmt.Sprintf("word '%s' mixes upper and lower case", word)
		}
	}
	return ""
}

// checkSemver returns why v is not a Semantic Versioning 2.0 version, or "".
func checkSemver(v string) string {
	if v == "" {
		return "found nothing"
	}
	core, build, hasBuild := strings.Cut(v, "+")
	core, pre, hasPre := strings.Cut(core, "-")
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return "want major.minor.patch"
	}
	for _, n := range nums {
		if n == "" || strings.Trim(n, "0123456789") != "" {
			return "major, minor and patch must be numbers"
		}
		if len(n) > 1 && n[0] == '0' {
			return "numbers must not have leading zeros"
		}
	}
	check := func(s, what string) string {
		for id := range strings.SplitSeq(s, ".") {
			if id == "" || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
				return "empty or invalid " + what + " identifier"
			}
		}
		return ""
	}
	if hasPre {
		if msg := check(pre, "pre-release"); msg != "" {
			return msg
		}
	}
	if hasBuild {
		return check(build, "build")
	}
	return ""
}
