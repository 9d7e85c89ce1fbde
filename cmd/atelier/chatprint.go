package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"

	"atelier/host/kernel"
)

// chatPrinter writes a chat's messages and events as text for a person at a terminal. Chat
// text, tool output and gadget data are untrusted: control characters (terminal escape
// sequences among them) are printed as U+FFFD, never passed to the terminal.
type chatPrinter struct {
	w       io.Writer
	verbose bool   // print tool calls' output
	me      string // the user's name: their own messages are not echoed
	// streamed says the agent's reply was printed delta by delta since its last message.
	streamed bool
	printed  map[uint64]bool                // messages printed, by id
	calls    map[string]kernel.ChatToolCall // tool calls seen, by id
	done     map[string]bool                // tool calls printed (finished), by id
}

func newChatPrinter(w io.Writer, me string, verbose bool) *chatPrinter {
	return &chatPrinter{w: w, me: me, verbose: verbose, printed: map[uint64]bool{}, calls: map[string]kernel.ChatToolCall{}, done: map[string]bool{}}
}

// clean makes untrusted text safe to print: control characters other than newline and tab
// become U+FFFD.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// endStream ends a streamed reply's line.
func (p *chatPrinter) endStream() {
	if p.streamed {
		fmt.Fprintln(p.w)
		p.streamed = false
	}
}

// delta prints the next piece of the agent's reply.
func (p *chatPrinter) delta(text string) {
	if !p.streamed {
		fmt.Fprint(p.w, "agent: ")
		p.streamed = true
	}
	fmt.Fprint(p.w, clean(text))
}

// message prints a stored message once (history and events both bring them).
func (p *chatPrinter) message(m kernel.ChatMessage) {
	if p.printed[m.ID] {
		return
	}
	p.printed[m.ID] = true
	switch m.Role {
	case kernel.ChatAssistant:
		for _, c := range m.ToolCalls {
			p.calls[c.ID] = c
		}
		if p.streamed {
			p.endStream() // its text was printed as it streamed
		} else if m.Text != "" {
			fmt.Fprintf(p.w, "agent: %s\n", clean(m.Text))
		}
	case kernel.ChatTool:
		p.tool(kernel.ChatToolEvent{ID: m.ToolCallID, Name: m.ToolName, Output: m.Text, IsError: m.IsError})
	case kernel.ChatUser:
		if m.Author != p.me {
			p.endStream()
			fmt.Fprintf(p.w, "%s: %s\n", clean(m.Author), clean(m.Text))
		}
	case kernel.ChatSummary:
		fmt.Fprintf(p.w, "(summary of the earlier messages) %s\n", clean(m.Text))
	default:
		p.notice(m.Text)
	}
}

// tool prints a finished tool call as one line, and its output when verbose, once (its event
// and its stored message both bring it).
func (p *chatPrinter) tool(t kernel.ChatToolEvent) {
	if p.done[t.ID] {
		return
	}
	p.done[t.ID] = true
	p.endStream()
	args := t.Args
	if c, ok := p.calls[t.ID]; ok && args == "" {
		args = c.Args
	}
	outcome := "ok"
	if t.IsError {
		outcome = "failed: " + firstLine(t.Output)
	}
	fmt.Fprintf(p.w, "  [tool] %s(%s) %s\n", t.Name, summarizeArgs(args), clean(outcome))
	if p.verbose && t.Output != "" {
		fmt.Fprintln(p.w, indent(clean(t.Output), "    "))
	}
}

// notice prints a host's note.
func (p *chatPrinter) notice(text string) {
	p.endStream()
	fmt.Fprintf(p.w, "-- %s\n", clean(text))
}

// draft prints a draft: its new gadgets and a diff per file.
func (p *chatPrinter) draft(d kernel.DraftInfo) {
	p.endStream()
	fmt.Fprintln(p.w, "== proposed change")
	for _, g := range d.NewGadgets {
		if g.Blueprint != "" {
			fmt.Fprintf(p.w, "new gadget %s (from blueprint %s)\n", clean(g.Name), clean(g.Blueprint))
		} else {
			fmt.Fprintf(p.w, "new gadget %s\n", clean(g.Name))
		}
	}
	for _, f := range d.Files {
		fmt.Fprintf(p.w, "-- %s/%s (%s)\n%s", clean(f.Gadget), clean(f.File), f.Status, clean(f.Diff))
		if !strings.HasSuffix(f.Diff, "\n") {
			fmt.Fprintln(p.w)
		}
	}
	if len(d.Stale) > 0 {
		fmt.Fprintf(p.w, "stale: %s moved since the draft was made; the agent must redo its edits\n", clean(strings.Join(d.Stale, ", ")))
	}
}

// dryRun prints what a dry run would change.
func (p *chatPrinter) dryRun(d kernel.DryRunInfo) {
	p.endStream()
	fmt.Fprintf(p.w, "== dry run %s (held until %s)\n", d.ID, d.Expires.Local().Format("15:04:05"))
	for _, g := range d.Gadgets {
		fmt.Fprintf(p.w, "gadget %s:\n", clean(g.Gadget))
		for _, c := range g.Added {
			fmt.Fprintf(p.w, "  + %s = %s\n", kvText(c.Key, c.Binary), kvValue(c.New, c.Binary))
		}
		for _, c := range g.Changed {
			fmt.Fprintf(p.w, "  ~ %s: %s -> %s\n", kvText(c.Key, c.Binary), kvValue(c.Old, c.Binary), kvValue(c.New, c.Binary))
		}
		for _, c := range g.Removed {
			fmt.Fprintf(p.w, "  - %s (was %s)\n", kvText(c.Key, c.Binary), kvValue(c.Old, c.Binary))
		}
	}
	for _, a := range d.Actions {
		fmt.Fprintf(p.w, "would ask %s: %s.%s(%s) as account %s\n", clean(a.Binding), clean(a.Gatekeeper), clean(a.Method), clean(a.Args), clean(a.Account))
	}
}

// connection prints a connection request and the accounts that could answer it, numbered.
func (p *chatPrinter) connection(req kernel.ConnectionRequest, accounts []kernel.AccountInfo) {
	p.endStream()
	target := "Code Mode"
	if req.Gadget != "" {
		target = "gadget " + req.Gadget
	}
	fmt.Fprintf(p.w, "== the agent asks to connect %s as binding %q of %s: %s\n", clean(req.Gatekeeper), clean(req.Binding), clean(target), clean(req.Reason))
	if len(accounts) == 0 {
		fmt.Fprintln(p.w, "you have no account on this gatekeeper (connect one in the workshop first)")
	}
	for i, a := range accounts {
		fmt.Fprintf(p.w, "  %d) %s %s\n", i+1, clean(a.Name), clean(a.Resource))
	}
}

func kvText(s string, binary bool) string {
	if binary {
		return "base64:" + s
	}
	return fmt.Sprintf("%q", s)
}

func kvValue(v *string, binary bool) string {
	if v == nil {
		return "(absent)"
	}
	return kvText(*v, binary)
}

// summarizeArgs shows a tool call's JSON arguments on one short line: key=value pairs, long
// values cut.
func summarizeArgs(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return cut(clean(strings.Join(strings.Fields(args), " ")), 100)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		parts = append(parts, k+"="+cut(strings.Join(strings.Fields(string(v)), " "), 40))
	}
	return cut(clean(strings.Join(parts, " ")), 120)
}

// cut shortens s to at most n runes, marking the cut with "…".
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return cut(line, 120)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
