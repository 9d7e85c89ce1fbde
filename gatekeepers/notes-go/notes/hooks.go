package notes

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"atelier/sdk/go/connector"
)

// The hook events of the manifest.
const (
	// eventNoteAdded is a webhook: the service POSTs each note added to the notebook.
	eventNoteAdded = "note-added"
	// eventDigest is polled: the notes added since the last poll.
	eventDigest = "digest"
)

var _ connector.Hooks = (*Notes)(nil)

// webhook is what SubscribeHook keeps of a note-added hook: the service's webhook.
type webhook struct {
	API string `json:"api"`
	ID  int64  `json:"id"`
}

// digest is what a digest hook keeps between polls: the highest note id reported.
type digest struct {
	Seen int64 `json:"seen"`
}

// hookKey is where the state of hook id is kept.
func hookKey(id string) string { return "hook/" + id }

// sessionFor returns session id.
func (n *Notes) sessionFor(id uint64) (*session, error) {
	s := n.sessions[id]
	if s == nil {
		return nil, fmt.Errorf("no session %d", id)
	}
	return s, nil
}

// putJSON keeps v under key.
func (n *Notes) putJSON(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return n.host.Set(key, b)
}

// getJSON reads key into v and reports whether it was set.
func (n *Notes) getJSON(key string, v any) (bool, error) {
	b, ok, err := n.host.Get(key)
	if err != nil || !ok {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// SubscribeHook creates the service's webhook for a note-added hook (with the hook's URL and
// secret), or notes where a digest hook starts (the notebook's highest note id).
func (n *Notes) SubscribeHook(id uint64, h connector.Hook) error {
	s, err := n.sessionFor(id)
	if err != nil {
		return err
	}
	switch h.Event {
	case eventNoteAdded:
		if h.URL == "" || len(h.Secret) == 0 {
			return fmt.Errorf("hook %s: a note-added hook needs a URL and a secret", h.ID)
		}
		var created webhook
		body := map[string]string{"url": h.URL, "secret": base64.StdEncoding.EncodeToString(h.Secret)}
		if err := n.call("POST", s.api+"/webhooks", body, &created); err != nil {
			return fmt.Errorf("create the webhook of hook %s: %w", h.ID, err)
		}
		created.API = s.api
		return n.putJSON(hookKey(h.ID), created)
	case eventDigest:
		notes, err := n.fetchNotes(s)
		if err != nil {
			return fmt.Errorf("start the digest of hook %s: %w", h.ID, err)
		}
		return n.putJSON(hookKey(h.ID), digest{Seen: highest(notes)})
	}
	return fmt.Errorf("unknown hook event %q (%s, %s)", h.Event, eventNoteAdded, eventDigest)
}

// UnsubscribeHook deletes the service's webhook of a note-added hook and forgets the hook.
func (n *Notes) UnsubscribeHook(id uint64, h connector.Hook) error {
	if h.Event == eventNoteAdded {
		var w webhook
		ok, err := n.getJSON(hookKey(h.ID), &w)
		if err != nil {
			return err
		}
		if ok {
			if err := n.call("DELETE", w.API+"/webhooks/"+strconv.FormatInt(w.ID, 10), nil, nil); err != nil {
				return fmt.Errorf("delete the webhook of hook %s: %w", h.ID, err)
			}
		}
	}
	return n.host.Delete(hookKey(h.ID))
}

// delivery is the body of the service's webhook request.
type delivery struct {
	Event    string `json:"event"`
	Notebook string `json:"notebook"`
	Note     *note  `json:"note"`
}

// ReceiveHook turns the service's note-added delivery into the payload {note}.
func (n *Notes) ReceiveHook(id uint64, h connector.Hook, headers []connector.Header, body []byte) ([]byte, error) {
	s, err := n.sessionFor(id)
	if err != nil {
		return nil, err
	}
	if h.Event != eventNoteAdded {
		return nil, fmt.Errorf("hook event %q is not a webhook", h.Event)
	}
	var d delivery
	if err := json.Unmarshal(body, &d); err != nil || d.Note == nil {
		return nil, fmt.Errorf("hook %s: the delivery is not {event, notebook, note}", h.ID)
	}
	if d.Event != eventNoteAdded || d.Notebook != s.notebook {
		return nil, nil // another event or notebook: nothing for this hook
	}
	if err := n.host.AuthorizeObservation(connector.Observation{Title: fmt.Sprintf("Note %d added to %s", d.Note.ID, s.notebook),
		Description: fmt.Sprintf("The service reported note %d (%q) added to notebook `%s`.", d.Note.ID, d.Note.Title, s.notebook)}); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"note": d.Note})
}

// PollHook returns {notes} added to the notebook since the last poll (or since the hook was
// registered), or nil when there are none.
func (n *Notes) PollHook(id uint64, h connector.Hook) ([]byte, error) {
	s, err := n.sessionFor(id)
	if err != nil {
		return nil, err
	}
	if h.Event != eventDigest {
		return nil, fmt.Errorf("hook event %q is not polled", h.Event)
	}
	var d digest
	if _, err := n.getJSON(hookKey(h.ID), &d); err != nil {
		return nil, err
	}
	notes, err := n.fetchNotes(s)
	if err != nil {
		return nil, err
	}
	added := []note{}
	for _, nt := range notes {
		if nt.ID > d.Seen {
			added = append(added, nt)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	if err := n.host.AuthorizeObservation(connector.Observation{Title: fmt.Sprintf("Digest of %s", s.notebook),
		Description: fmt.Sprintf("Read %d notes added to notebook `%s` since the last digest.", len(added), s.notebook)}); err != nil {
		return nil, err
	}
	if err := n.putJSON(hookKey(h.ID), digest{Seen: highest(notes)}); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"notes": added})
}

// fetchNotes returns the notebook's notes without recording an observation (for bookkeeping;
// callers record one before handing notes on).
func (n *Notes) fetchNotes(s *session) ([]note, error) {
	var res struct {
		Notes []note `json:"notes"`
	}
	if err := n.call("GET", s.api+"/notes", nil, &res); err != nil {
		return nil, err
	}
	return res.Notes, nil
}

// highest returns the highest id of notes (0 when empty).
func highest(notes []note) int64 {
	var m int64
	for _, nt := range notes {
		m = max(m, nt.ID)
	}
	return m
}
