// Package notes is the format-independent logic of the example notes gatekeeper: it connects
// agents and gadgets to one notebook of a JSON notes API (tests/gatekeeper/jsonapi serves
// one). Reads are recorded as observations; adding and removing notes are actions applied only
// after approval. It never sees the user's API token: the host adds it to each request. It
// also serves hooks (hooks.go): a webhook for each note added, and a polled digest.
//
// gatekeepers/notes-go (a component) and gatekeepers/notes-extism (an Extism plugin) both
// register New's connector; each fills a Host with its SDK's functions. It lives inside
// notes-go so that sdk/build-gadget.sh, which hashes the guest's folder, rebuilds the
// component when it changes.
package notes

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"atelier/sdk/go/connector"
)

// Host is what the notes logic needs from the gatekeeper's host, whatever its ABI: the
// functions of either SDK (atelier/sdk/go/gatekeeper and host, or their Extism twins).
type Host struct {
	// Fetch sends one HTTP request through the host.
	Fetch func(connector.Request) (*connector.Response, error)
	// AuthorizeObservation records a read; an error means its data must not be returned.
	AuthorizeObservation func(connector.Observation) error
	// SubmitAction queues an action for approval and returns its id.
	SubmitAction func(connector.Action) (uint64, error)
	// Get returns the value of key in the gatekeeper's own key-value state, and whether it is set.
	Get func(key string) ([]byte, bool, error)
	// Set sets key to value.
	Set func(key string, value []byte) error
	// Delete deletes key.
	Delete func(key string) error
	// Info logs message at info level.
	Info func(message string)
}

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

// Notes is the notes gatekeeper's connector over one Host. It is not safe for concurrent use
// (a guest runs one call at a time).
type Notes struct {
	host     Host
	sessions map[uint64]*session
	next     uint64
}

// New returns the connector, talking to the host through h.
func New(h Host) *Notes { return &Notes{host: h, sessions: map[uint64]*session{}} }

var _ connector.Connector = (*Notes)(nil)

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

// Describe returns the vendor description.
func (n *Notes) Describe() connector.Vendor {
	return connector.Vendor{
		DisplayName: "Notes",
		URL:         "https://notes.example.com",
		Tagline:     "Read and edit notebooks",
		Description: "Lists notes of one notebook and queues additions and removals for approval.",
	}
}

// ResourceKinds returns the one kind served: notebooks.
func (n *Notes) ResourceKinds() []connector.ResourceKind {
	return []connector.ResourceKind{{Kind: "notebook", Title: "Notebook", Description: "One notebook and its notes."}}
}

// parseNotebook splits a resource URL ORIGIN/notebooks/NAME.
func parseNotebook(url string) (origin, name string, err error) {
	origin, name, ok := strings.Cut(url, "/notebooks/")
	if !ok || name == "" || strings.Contains(name, "/") || !strings.Contains(origin, "://") {
		return "", "", fmt.Errorf("%q is not a notebook URL (ORIGIN/notebooks/NAME)", url)
	}
	return origin, name, nil
}

// DescribeResource describes the notebook at url (ORIGIN/notebooks/NAME).
func (n *Notes) DescribeResource(url string) (connector.Resource, error) {
	_, name, err := parseNotebook(url)
	if err != nil {
		return connector.Resource{}, err
	}
	return connector.Resource{URL: url, Title: "Notebook " + name, Snippet: "Notes of " + name, SuggestedBindingName: "notes"}, nil
}

// TypeScriptTypes returns the TypeScript declarations of a session's methods.
func (n *Notes) TypeScriptTypes() string { return types }

// OpenSession opens a session on the notebook at url for caller.
func (n *Notes) OpenSession(url, caller string) (uint64, error) {
	origin, name, err := parseNotebook(url)
	if err != nil {
		return 0, err
	}
	n.next++
	n.sessions[n.next] = &session{notebook: name, api: origin + "/api/notebooks/" + name}
	n.host.Info("session " + strconv.FormatUint(n.next, 10) + " for " + caller + " on " + name)
	return n.next, nil
}

// CloseSession forgets session id.
func (n *Notes) CloseSession(id uint64) { delete(n.sessions, id) }

// Invoke calls method (list, get, add, remove) of session id with args, a JSON array, and
// returns its JSON result.
func (n *Notes) Invoke(id uint64, method, args string) (string, error) {
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
		out, err = n.list(s)
	case "get":
		var nid int64
		if err = arg(params, 0, &nid); err == nil {
			out, err = n.get(s, nid)
		}
	case "add":
		c := change{Op: "add", API: s.api}
		if err = args2(params, &c.Title, &c.Body); err == nil {
			out, err = n.submit(s, c)
		}
	case "remove":
		c := change{Op: "remove", API: s.api}
		if err = arg(params, 0, &c.ID); err == nil {
			out, err = n.submit(s, c)
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

// args2 decodes the first two arguments into a and b.
func args2(params []json.RawMessage, a, b any) error {
	if err := arg(params, 0, a); err != nil {
		return err
	}
	return arg(params, 1, b)
}

// call sends one request to the API and decodes a JSON answer into out (when not nil).
func (n *Notes) call(method, url string, body any, out any) error {
	req := connector.Request{Method: method, URL: url}
	if body != nil {
		var err error
		if req.Body, err = json.Marshal(body); err != nil {
			return err
		}
		req.Headers = []connector.Header{{Name: "Content-Type", Value: "application/json"}}
	}
	resp, err := n.host.Fetch(req)
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

// noteURL is the API address of note id.
func noteURL(api string, id int64) string { return api + "/notes/" + strconv.FormatInt(id, 10) }

func (n *Notes) list(s *session) ([]note, error) {
	notes, err := n.fetchNotes(s)
	if err != nil {
		return nil, err
	}
	if notes == nil {
		notes = []note{}
	}
	err = n.host.AuthorizeObservation(connector.Observation{Title: "Read notebook " + s.notebook,
		Description: fmt.Sprintf("Listed %d notes of notebook `%s`.", len(notes), s.notebook)})
	return notes, err
}

func (n *Notes) get(s *session, id int64) (*note, error) {
	var res note
	if err := n.call("GET", noteURL(s.api, id), nil, &res); err != nil {
		return nil, err
	}
	err := n.host.AuthorizeObservation(connector.Observation{Title: fmt.Sprintf("Read note %d of %s", id, s.notebook),
		Description: fmt.Sprintf("Read note %d (%q) of notebook `%s`.", id, res.Title, s.notebook)})
	return &res, err
}

func (n *Notes) submit(s *session, c change) (any, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	a := connector.Action{Payload: string(payload)}
	switch c.Op {
	case "add":
		a.Title = fmt.Sprintf("Add note %q to %s", c.Title, s.notebook)
		a.Description = fmt.Sprintf("Adds a note to notebook `%s`:\n\n**%s**\n\n%s", s.notebook, c.Title, c.Body)
		a.Kind = connector.ActionKind{Tag: "add-note", Label: "Add a note"}
		a.AutoApprovable, a.ImplementsRevert = true, true
	default:
		a.Title = fmt.Sprintf("Remove note %d from %s", c.ID, s.notebook)
		a.Description = fmt.Sprintf("Deletes note %d of notebook `%s`.", c.ID, s.notebook)
		a.Kind = connector.ActionKind{Tag: "remove-note", Label: "Remove a note"}
	}
	id, err := n.host.SubmitAction(a)
	if err != nil {
		return nil, err
	}
	return map[string]any{"action": id, "status": "pending"}, nil
}

// appliedKey is where the id of the note an applied add created is kept, for revert.
func appliedKey(action uint64) string { return "applied/" + strconv.FormatUint(action, 10) }

// ApplyAction carries out the approved action id described by payload.
func (n *Notes) ApplyAction(id uint64, payload string) (string, error) {
	var c change
	if err := json.Unmarshal([]byte(payload), &c); err != nil {
		return "", fmt.Errorf("action %d: bad payload: %v", id, err)
	}
	switch c.Op {
	case "add":
		var created note
		if err := n.call("POST", c.API+"/notes", map[string]string{"title": c.Title, "body": c.Body}, &created); err != nil {
			return "", err
		}
		if err := n.host.Set(appliedKey(id), []byte(strconv.FormatInt(created.ID, 10))); err != nil {
			return "", err
		}
		return fmt.Sprintf("added note %d", created.ID), nil
	case "remove":
		if err := n.call("DELETE", noteURL(c.API, c.ID), nil, nil); err != nil {
			return "", err
		}
		return fmt.Sprintf("removed note %d", c.ID), nil
	}
	return "", fmt.Errorf("action %d: unknown operation %q", id, c.Op)
}

// RejectAction logs that action id was rejected.
func (n *Notes) RejectAction(id uint64, payload string) {
	n.host.Info("action " + strconv.FormatUint(id, 10) + " rejected")
}

// RevertAction removes the note an applied add action id created.
func (n *Notes) RevertAction(id uint64, payload string) (string, error) {
	var c change
	if err := json.Unmarshal([]byte(payload), &c); err != nil || c.Op != "add" {
		return "", errors.New("only an added note can be reverted")
	}
	v, ok, err := n.host.Get(appliedKey(id))
	if err != nil || !ok {
		return "", fmt.Errorf("action %d was not applied", id)
	}
	if err := n.call("DELETE", c.API+"/notes/"+string(v), nil, nil); err != nil {
		return "", err
	}
	if err := n.host.Delete(appliedKey(id)); err != nil {
		return "", err
	}
	return "removed note " + string(v), nil
}
