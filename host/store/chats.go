package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A workspace's chats live in its own bucket (deleted with it): the chat records, one
// sub-bucket of messages per chat (keyed by the message's big-endian id, so that the key
// order is the id order), and each chat's draft. The buckets are created by the first commit
// that needs them (no migration). The store keeps a message's body as the kernel's JSON; the
// kernel assigns the ids (it is the workspace's single writer) and keeps a chat's counters in
// its record, written by the same commit as the message.
var (
	subChats    = []byte("chats")    // chat id -> Chat
	subChatMsgs = []byte("chatmsgs") // chat id -> bucket: message id -> message JSON
	subDrafts   = []byte("drafts")   // chat id -> Draft
)

// Chat is a chat's record. Creator is the id of the user who started it; Model is the id of
// its model ("": a chat between people).
type Chat struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Model   string    `json:"model,omitempty"`
	Creator string    `json:"creator"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// LastMessage is the id of the newest message (0: none); Messages and Bytes count the
	// chat's messages and the bytes of their bodies.
	LastMessage uint64 `json:"lastMessage"`
	Messages    int    `json:"messages"`
	Bytes       int64  `json:"bytes"`
	// Requests are the connection requests waiting for the user.
	Requests []ChatRequest `json:"requests,omitempty"`
	// Gatekeepers are the accounts the user bound to the chat's Code Mode, by binding name
	// (name -> account id).
	Gatekeepers map[string]string `json:"gatekeepers,omitempty"`
}

// ChatRequest asks the chatting user to bind one of their accounts of Gatekeeper under
// Binding, for gadget Gadget ("": the chat's Code Mode env).
type ChatRequest struct {
	ID         string    `json:"id"`
	User       string    `json:"user"` // the user asked (the chatting user of the run)
	Gatekeeper string    `json:"gatekeeper"`
	Binding    string    `json:"binding"`
	Gadget     string    `json:"gadget,omitempty"`
	Reason     string    `json:"reason"`
	Created    time.Time `json:"created"`
}

// ChatMessage is one message of a chat: its id and the kernel's JSON of it.
type ChatMessage struct {
	Chat string          `json:"chat"`
	ID   uint64          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// Draft is the code changes a chat's agent proposed: files of existing gadgets and new
// gadgets, held until a person accepts or rejects them.
type Draft struct {
	Chat    string        `json:"chat"`
	Gadgets []DraftGadget `json:"gadgets"`
	Updated time.Time     `json:"updated"`
}

// DraftGadget is one gadget of a draft: an existing one (Gadget set, its files based on
// version Base) or a new one (Gadget "", named Name, made of Files or from Blueprint).
type DraftGadget struct {
	Gadget    GadgetID    `json:"gadget,omitempty"`
	Name      string      `json:"name"`
	Blueprint string      `json:"blueprint,omitempty"`
	Base      int         `json:"base,omitempty"`
	Files     []DraftFile `json:"files"`
}

// DraftFile is one file of a draft: its content now and, for a file of an existing gadget,
// the base version's content (Base nil: the base had no such file).
type DraftFile struct {
	Name    string  `json:"name"`
	Base    *string `json:"base,omitempty"`
	Content string  `json:"content"`
}

// Size is the bytes of the draft's file contents, base and new.
func (d Draft) Size() int {
	n := 0
	for _, g := range d.Gadgets {
		for _, f := range g.Files {
			n += len(f.Content)
			if f.Base != nil {
				n += len(*f.Base)
			}
		}
	}
	return n
}

// PutChat creates or replaces a chat's record.
func PutChat(c Chat) Mutation { return Mutation{Kind: MutPutChat, Chat: &c} }

// DeleteChat removes a chat with its messages and draft (a missing one is not an error).
func DeleteChat(id string) Mutation { return Mutation{Kind: MutDeleteChat, Chat: &Chat{ID: id}} }

// PutChatMessage stores a message of a chat (the chat's record is the caller's to update in
// the same commit).
func PutChatMessage(m ChatMessage) Mutation {
	return Mutation{Kind: MutPutChatMessage, Message: &m}
}

// PutDraft creates or replaces a chat's draft.
func PutDraft(d Draft) Mutation { return Mutation{Kind: MutPutDraft, Draft: &d} }

// DeleteDraft drops a chat's draft (a missing one is not an error).
func DeleteDraft(chat string) Mutation {
	return Mutation{Kind: MutDeleteDraft, Draft: &Draft{Chat: chat}}
}

// checkChat refuses a chat mutation that cannot be applied.
func (m Mutation) checkChat() error {
	valid := func(id string) bool { return id != "" && bytes.IndexByte([]byte(id), 0) < 0 }
	switch m.Kind {
	case MutPutChat, MutDeleteChat:
		if m.Chat == nil || !valid(m.Chat.ID) {
			return errors.New("chat mutation without a valid chat id")
		}
	case MutPutChatMessage:
		if m.Message == nil || !valid(m.Message.Chat) || m.Message.ID == 0 || !json.Valid(m.Message.Data) {
			return errors.New("chat message mutation without a chat, an id or a JSON body")
		}
	case MutPutDraft, MutDeleteDraft:
		if m.Draft == nil || !valid(m.Draft.Chat) {
			return errors.New("draft mutation without a valid chat id")
		}
	}
	return nil
}

// applyChat writes one chat mutation into workspace bucket b.
func applyChat(b *bolt.Bucket, m Mutation) error {
	switch m.Kind {
	case MutPutChat:
		sb, err := b.CreateBucketIfNotExists(subChats)
		if err != nil {
			return err
		}
		return putJSON(sb, []byte(m.Chat.ID), *m.Chat)
	case MutDeleteChat:
		id := []byte(m.Chat.ID)
		for _, sub := range [][]byte{subChats, subDrafts} {
			if sb := b.Bucket(sub); sb != nil {
				if err := sb.Delete(id); err != nil {
					return err
				}
			}
		}
		if mb := b.Bucket(subChatMsgs); mb != nil && mb.Bucket(id) != nil {
			return mb.DeleteBucket(id)
		}
		return nil
	case MutPutChatMessage:
		mb, err := b.CreateBucketIfNotExists(subChatMsgs)
		if err != nil {
			return err
		}
		cb, err := mb.CreateBucketIfNotExists([]byte(m.Message.Chat))
		if err != nil {
			return err
		}
		return cb.Put(binary.BigEndian.AppendUint64(nil, m.Message.ID), m.Message.Data)
	case MutPutDraft:
		sb, err := b.CreateBucketIfNotExists(subDrafts)
		if err != nil {
			return err
		}
		return putJSON(sb, []byte(m.Draft.Chat), *m.Draft)
	case MutDeleteDraft:
		if sb := b.Bucket(subDrafts); sb != nil {
			return sb.Delete([]byte(m.Draft.Chat))
		}
	}
	return nil
}

// Chats implements WorkspaceStore.
func (w *boltWS) Chats() ([]Chat, error) {
	return listJSON[Chat](w, subChats, "read chats")
}

// Chat implements WorkspaceStore.
func (w *boltWS) Chat(id string) (Chat, error) {
	var c Chat
	err := w.view(func(b *bolt.Bucket) error {
		sb := b.Bucket(subChats)
		if sb == nil {
			return ErrNotFound
		}
		return getJSON(sb, []byte(id), &c)
	})
	if err != nil {
		return Chat{}, fmt.Errorf("read chat %s: %w", id, err)
	}
	return c, nil
}

// ChatMessages implements WorkspaceStore.
func (w *boltWS) ChatMessages(chat string, before uint64, limit int) ([]ChatMessage, error) {
	var out []ChatMessage
	err := w.view(func(b *bolt.Bucket) error {
		mb := b.Bucket(subChatMsgs)
		if mb == nil {
			return nil
		}
		cb := mb.Bucket([]byte(chat))
		if cb == nil {
			return nil
		}
		c := cb.Cursor()
		var k, v []byte
		if before == 0 {
			k, v = c.Last()
		} else if k, v = c.Seek(binary.BigEndian.AppendUint64(nil, before)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && len(out) < limit; k, v = c.Prev() {
			if len(k) != 8 {
				return fmt.Errorf("corrupt message key %x of chat %s", k, chat)
			}
			out = append(out, ChatMessage{Chat: chat, ID: binary.BigEndian.Uint64(k), Data: bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the messages of chat %s: %w", chat, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// HasDraft implements WorkspaceStore.
func (w *boltWS) HasDraft(chat string) (bool, error) {
	found := false
	err := w.view(func(b *bolt.Bucket) error {
		sb := b.Bucket(subDrafts)
		found = sb != nil && sb.Get([]byte(chat)) != nil
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("look for the draft of chat %s: %w", chat, err)
	}
	return found, nil
}

// Draft implements WorkspaceStore.
func (w *boltWS) Draft(chat string) (Draft, bool, error) {
	var d Draft
	found := false
	err := w.view(func(b *bolt.Bucket) error {
		sb := b.Bucket(subDrafts)
		if sb == nil || sb.Get([]byte(chat)) == nil {
			return nil
		}
		found = true
		return getJSON(sb, []byte(chat), &d)
	})
	if err != nil {
		return Draft{}, false, fmt.Errorf("read the draft of chat %s: %w", chat, err)
	}
	return d, found, nil
}
