//go:build wasip1

// Command notes-extism is the notes gatekeeper of gatekeepers/notes-go built as an Extism
// plugin (manifest "format": "extism") instead of a component: a core module whose plugin
// functions take and return JSON (abi.go has the hand-written Extism ABI; no PDK). It
// connects agents and gadgets to one notebook of a JSON notes API (tests/gatekeeper/jsonapi
// serves one). Reads are recorded as observations; adding and removing notes are actions
// applied only after approval. It never sees the user's API token: the host adds it.
//
// Build: gatekeepers/notes-extism/build.sh notes.wasm; package it with manifest.json (see
// docs/gatekeepers.md).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var gk = &notes{sessions: map[uint64]*session{}}

func main() {}

// note is one note of the API.
type note struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// session is one caller's view of one notebook.
type session struct {
	notebook string
	api      string // https://host/api/notebooks/NAME
}

// change is the payload of an action: what apply-action will do.
type change struct {
	Op    string `json:"op"` // "add" or "remove"
	API   string `json:"api"`
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
	ID    int64  `json:"id,omitempty"`
}

type notes struct {
	sessions map[uint64]*session
	next     uint64
}

const types = `/** One note. */
interface Note { id: number; title: string; body: string }
/** A pending change, applied once the user approves it. */
interface Pending { action: number; status: "pending" }
/** One notebook of the notes service. */
interface Notebook {
  /** Lists the notebook's notes (recorded as an observation). */
  list(): Promise<Note[]>;
  /** Returns one note (recorded as an observation). */
  get(id: number): Promise<Note>;
  /** Queues adding a note. */
  add(title: string, body: string): Promise<Pending>;
  /** Queues removing a note. */
  remove(id: number): Promise<Pending>;
}
`

func (n *notes) Describe() Vendor {
	return Vendor{
		DisplayName: "Notes",
		URL:         "https://notes.example.com",
		Tagline:     "Read and edit notebooks",
		Description: "Lists notes of one notebook and queues additions and removals for approval.",
	}
}

func (n *notes) ResourceKinds() []ResourceKind {
	return []ResourceKind{{Kind: "notebook", Title: "Notebook", Description: "One notebook and its notes."}}
}

// parseNotebook splits a resource URL ORIGIN/notebooks/NAME.
func parseNotebook(url string) (origin, name string, err error) {
	origin, name, ok := strings.Cut(url, "/notebooks/")
	if !ok || name == "" || strings.Contains(name, "/") || !strings.Contains(origin, "://") {
		return "", "", fmt.Errorf("%q is not a notebook URL (ORIGIN/notebooks/NAME)", url)
	}
	return origin, name, nil
}

func (n *notes) DescribeResource(url string) (Resource, error) {
	_, name, err := parseNotebook(url)
	if err != nil {
		return Resource{}, err
	}
	return Resource{URL: url, Title: "Notebook " + name, Snippet: "Notes of " + name, SuggestedBindingName: "notes"}, nil
}

func (n *notes) TypeScriptTypes() string { return types }

func (n *notes) OpenSession(url, caller string) (uint64, error) {
	origin, name, err := parseNotebook(url)
	if err != nil {
		return 0, err
	}
	n.next++
	n.sessions[n.next] = &session{notebook: name, api: origin + "/api/notebooks/" + name}
	Log("info", "session "+strconv.FormatUint(n.next, 10)+" for "+caller+" on "+name)
	return n.next, nil
}

func (n *notes) CloseSession(id uint64) { delete(n.sessions, id) }

func (n *notes) Invoke(id uint64, method, args string) (string, error) {
	s := n.sessions[id]
	if s == nil {
		return "", fmt.Errorf("no session %d", id)
	}
	var params []json.RawMessage
	if err := json.Unmarshal([]byte(args), &params); err != nil {
		return "", fmt.Errorf("%s: arguments are not a JSON array: %v", method, err)
	}
	var out any
	var err error
	switch method {
	case "list":
		out, err = s.list()
	case "get":
		var nid int64
		if err = arg(params, 0, &nid); err == nil {
			out, err = s.get(nid)
		}
	case "add":
		c := change{Op: "add", API: s.api}
		if err = arg(params, 0, &c.Title); err == nil {
			if err = arg(params, 1, &c.Body); err == nil {
				out, err = s.submit(c)
			}
		}
	case "remove":
		c := change{Op: "remove", API: s.api}
		if err = arg(params, 0, &c.ID); err == nil {
			out, err = s.submit(c)
		}
	default:
		return "", fmt.Errorf("unknown method %q (list, get, add, remove)", method)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", method, err)
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// arg decodes argument i into v.
func arg(params []json.RawMessage, i int, v any) error {
	if i >= len(params) {
		return fmt.Errorf("missing argument %d", i+1)
	}
	if err := json.Unmarshal(params[i], v); err != nil {
		return fmt.Errorf("argument %d: %v", i+1, err)
	}
	return nil
}

// call sends one request to the API and decodes a JSON answer into out (when not nil).
func call(method, url string, body any, out any) error {
	req := Request{Method: method, URL: url}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req.Body = b
		req.Headers = []Header{{Name: "Content-Type", Value: "application/json"}}
	}
	resp, err := Fetch(req)
	if err != nil {
		return err
	}
	if resp.Status/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, url, resp.Status, strings.TrimSpace(string(resp.Body)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(resp.Body, out)
}

func (s *session) list() ([]note, error) {
	var res struct {
		Notes []note `json:"notes"`
	}
	if err := call("GET", s.api+"/notes", nil, &res); err != nil {
		return nil, err
	}
	if res.Notes == nil {
		res.Notes = []note{}
	}
	err := AuthorizeObservation(Observation{
		Title:       "Read notebook " + s.notebook,
		Description: fmt.Sprintf("Listed %d notes of notebook `%s`.", len(res.Notes), s.notebook),
	})
	return res.Notes, err
}

func (s *session) get(id int64) (*note, error) {
	var res note
	if err := call("GET", s.api+"/notes/"+strconv.FormatInt(id, 10), nil, &res); err != nil {
		return nil, err
	}
	err := AuthorizeObservation(Observation{
		Title:       fmt.Sprintf("Read note %d of %s", id, s.notebook),
		Description: fmt.Sprintf("Read note %d (%q) of notebook `%s`.", id, res.Title, s.notebook),
	})
	return &res, err
}

func (s *session) submit(c change) (any, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	a := Action{Payload: string(payload)}
	switch c.Op {
	case "add":
		a.Title = fmt.Sprintf("Add note %q to %s", c.Title, s.notebook)
		a.Description = fmt.Sprintf("Adds a note to notebook `%s`:\n\n**%s**\n\n%s", s.notebook, c.Title, c.Body)
		a.Kind = ActionKind{Tag: "add-note", Label: "Add a note"}
		a.AutoApprovable, a.ImplementsRevert = true, true
	default:
		a.Title = fmt.Sprintf("Remove note %d from %s", c.ID, s.notebook)
		a.Description = fmt.Sprintf("Deletes note %d of notebook `%s`.", c.ID, s.notebook)
		a.Kind = ActionKind{Tag: "remove-note", Label: "Remove a note"}
	}
	id, err := SubmitAction(a)
	if err != nil {
		return nil, err
	}
	return map[string]any{"action": id, "status": "pending"}, nil
}

// appliedKey is where the id of the note an applied add created is kept, for revert.
func appliedKey(action uint64) string { return "applied/" + strconv.FormatUint(action, 10) }

func (n *notes) ApplyAction(id uint64, payload string) (string, error) {
	var c change
	if err := json.Unmarshal([]byte(payload), &c); err != nil {
		return "", fmt.Errorf("action %d: bad payload: %v", id, err)
	}
	switch c.Op {
	case "add":
		var created note
		if err := call("POST", c.API+"/notes", map[string]string{"title": c.Title, "body": c.Body}, &created); err != nil {
			return "", err
		}
		if err := KVSet(appliedKey(id), []byte(strconv.FormatInt(created.ID, 10))); err != nil {
			return "", err
		}
		return fmt.Sprintf("added note %d", created.ID), nil
	case "remove":
		if err := call("DELETE", c.API+"/notes/"+strconv.FormatInt(c.ID, 10), nil, nil); err != nil {
			return "", err
		}
		return fmt.Sprintf("removed note %d", c.ID), nil
	}
	return "", fmt.Errorf("action %d: unknown operation %q", id, c.Op)
}

func (n *notes) RejectAction(id uint64, payload string) {
	Log("info", "action "+strconv.FormatUint(id, 10)+" rejected")
}

func (n *notes) RevertAction(id uint64, payload string) (string, error) {
	var c change
	if err := json.Unmarshal([]byte(payload), &c); err != nil || c.Op != "add" {
		return "", errors.New("only an added note can be reverted")
	}
	v, ok, err := KVGet(appliedKey(id))
	if err != nil || !ok {
		return "", fmt.Errorf("action %d was not applied", id)
	}
	if err := call("DELETE", c.API+"/notes/"+string(v), nil, nil); err != nil {
		return "", err
	}
	if err := KVDelete(appliedKey(id)); err != nil {
		return "", err
	}
	return "removed note " + string(v), nil
}
