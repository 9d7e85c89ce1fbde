package kernel

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"atelier/host/kernel/internal/diff"
	"atelier/host/store"
	"atelier/jsruntime"
)

// A chat's draft as people see it (getDraft: a diff per file), and its acceptance: every
// gadget it touches gets a new version through the usual deploy path (TypeScript files are
// handled as in any JS gadget upload), each naming the chat; new gadgets are created. All of
// it is built and checked first, so a build error changes nothing and names the gadget. A
// draft whose gadgets moved since it was based on them is refused (CONFLICT) until the agent
// rebases it (draftedit.go).

// diffSteps bounds the diff search of one description of a draft (all its files together) or
// of one edited file: under 100 ms of CPU (15 ns a step), past which files show replaced whole.
const diffSteps = 5_000_000

// draftFileOf describes one file of a draft, its diff searched within bu.
func draftFileOf(bu *diff.Budget, gadget, file string, base *string, content string) DraftFile {
	f := DraftFile{Gadget: gadget, File: file, Status: "modified"}
	old := ""
	if base == nil {
		f.Status = "added"
	} else {
		old = *base
	}
	f.Diff = bu.Unified(gadget+"/"+file, old, content)
	return f
}

// draftInfo describes draft d of chat id.
func (ov *overseer) draftInfo(id string, d store.Draft) DraftInfo {
	info := DraftInfo{Chat: id, Files: []DraftFile{}, NewGadgets: []DraftGadget{}, Stale: []string{}}
	bu := diff.NewBudget(diffSteps)
	for _, g := range d.Gadgets {
		if g.Gadget == "" {
			info.NewGadgets = append(info.NewGadgets, DraftGadget{Name: g.Name, Blueprint: g.Blueprint})
		} else if cur, err := ov.gadget(g.Gadget); err != nil || cur.Current != g.Base {
			info.Stale = append(info.Stale, g.Name)
		}
		for _, f := range g.Files {
			info.Files = append(info.Files, draftFileOf(bu, g.Name, f.Name, f.Base, f.Content))
		}
	}
	return info
}

// publishDraft publishes draft d of chat id as a "proposed_change" event.
func (ov *overseer) publishDraft(ctx context.Context, id string, d store.Draft) {
	topic := chatTopic(ov.id, id)
	if !ov.k.hub.watched(topic) {
		return
	}
	info := ov.draftInfo(id, d)
	ov.k.hub.publish(topic, ChatEvent{Type: EventProposed, Chat: id, Draft: &info})
	ov.publishStatus(ctx, id)
}

// GetDraft returns the chat's draft: a unified diff per file, the gadgets it creates, and the
// gadgets that moved since it was based on them (Stale). A chat without a draft has an empty one.
func (w *Workspace) GetDraft(ctx context.Context, chatID string) (DraftInfo, error) {
	var info DraftInfo
	err := w.enterChats(ctx, store.RoleUse, "getDraft", func(ov *overseer) error {
		if _, err := ov.loadChat(chatID); err != nil {
			return err
		}
		d, _, err := ov.ws.Draft(chatID)
		if err != nil {
			return wrapErr(err, "getDraft")
		}
		info = ov.draftInfo(chatID, d)
		return nil
	})
	return info, err
}

// builtGadget is one gadget of an accepted draft, built and checked.
type builtGadget struct {
	entry  store.DraftGadget
	code   []byte
	client *string
	grants []string // a new gadget's
}

// buildDraft builds every gadget of d; the first error names its gadget and changes nothing.
func (w *Workspace) buildDraft(ctx context.Context, ov *overseer, d store.Draft) ([]builtGadget, error) {
	var out []builtGadget
	for _, e := range d.Gadgets {
		b := builtGadget{entry: e}
		var err error
		switch {
		case e.Gadget == "" && e.Blueprint != "":
			var bp store.Blueprint
			if bp, b.code, err = w.ownBlueprint(ctx, e.Blueprint); err == nil {
				b.grants = bp.Grants
				_, err = w.k.checkCode(ctx, b.code, w.k.usableGrants(bp.Grants))
			}
		case e.Gadget == "":
			b.grants = jsruntime.GadgetGrants()
			b.code, b.client, err = w.k.readUpload(draftFiles(nil, e), nil)
			if err == nil {
				_, err = w.k.checkCode(ctx, b.code, b.grants)
			}
		default:
			var g store.Gadget
			if g, err = ov.gadget(e.Gadget); err != nil {
				break
			}
			var base map[string]string
			if base, err = w.k.gadgetSources(ctx, g); err != nil {
				break
			}
			if b.code, b.client, err = w.k.readUpload(draftFiles(base, e), nil); err == nil {
				_, err = w.k.checkCode(ctx, b.code, w.k.usableGrants(g.Grants))
			}
		}
		if err != nil {
			return nil, wrapErr(err, "acceptDraft: gadget %s does not build; nothing was deployed", e.Name)
		}
		out = append(out, b)
	}
	return out, nil
}

// draftFiles overlays entry e's files on base, as an upload object.
func draftFiles(base map[string]string, e store.DraftGadget) map[string]any {
	files := make(map[string]any, len(base)+len(e.Files))
	for name, src := range base {
		files[name] = src
	}
	for _, f := range e.Files {
		files[f.Name] = f.Content
	}
	return files
}

// AcceptDraft builds the chat's draft and deploys it (build role): each gadget it changes gets
// a new version naming the chat, and each gadget it creates is created. A stale draft is
// refused with CONFLICT (the agent is told to rebase it). It returns the gadgets deployed.
func (w *Workspace) AcceptDraft(ctx context.Context, chatID string) ([]GadgetInfo, error) {
	out := []GadgetInfo{}
	var notice string
	err := w.enterChats(ctx, store.RoleBuild, "acceptDraft", func(ov *overseer) error {
		unlock := w.k.chats.lock(chatKey{ov.id, chatID})
		defer unlock()
		if _, err := ov.loadChat(chatID); err != nil {
			return err
		}
		d, ok, err := ov.ws.Draft(chatID)
		if err != nil {
			return wrapErr(err, "acceptDraft")
		}
		if !ok || len(d.Gadgets) == 0 {
			return fail(CodeFailedPrecondition, "acceptDraft: chat %s has no draft", chatID)
		}
		if stale := ov.draftInfo(chatID, d).Stale; len(stale) > 0 {
			notice = fmt.Sprintf("%s could not accept the draft: gadget %s changed since the draft was based on it. Read its files again (readFile) to rebase the draft, re-check the edits, and say when it is ready.", w.p.username, strings.Join(stale, ", "))
			return fail(CodeConflict, "acceptDraft: gadget %s moved to a newer version since the draft was based on it; the agent must rebase the draft (it was told) before it can be accepted", strings.Join(stale, ", "))
		}
		built, err := w.buildDraft(ctx, ov, d)
		if err != nil {
			return err
		}
		var done []string
		for _, b := range built {
			var g store.Gadget
			if b.entry.Gadget == "" {
				g, err = ov.createGadget(ctx, w.p, b.entry.Name, b.code, b.client, b.grants, "from chat "+chatID, chatID)
			} else {
				g, err = ov.deploy(ctx, w.p, b.entry.Gadget, b.code, b.client, nil, chatID)
			}
			if err != nil {
				if len(done) > 0 {
					err = fmt.Errorf("%w (already deployed: %s; the draft is kept)", err, strings.Join(done, ", "))
				}
				return wrapErr(err, "acceptDraft: deploy gadget %s", b.entry.Name)
			}
			done = append(done, fmt.Sprintf("%s version %d", g.Name, g.Current))
			out = append(out, ov.infoOf(g))
		}
		if err := ov.write(ctx, store.DeleteDraft(chatID), auditEntry(w.p, "chat.acceptDraft", chatID, strings.Join(done, ", "))); err != nil {
			return wrapErr(err, "acceptDraft: drop the accepted draft")
		}
		notice = fmt.Sprintf("%s accepted the draft: %s.", w.p.username, strings.Join(done, ", "))
		return nil
	})
	w.draftDecided(ctx, chatID, notice)
	return out, err
}

// RejectDraft drops the chat's draft (build role); no gadget changes.
func (w *Workspace) RejectDraft(ctx context.Context, chatID string) error {
	var notice string
	err := w.enterChats(ctx, store.RoleBuild, "rejectDraft", func(ov *overseer) error {
		unlock := w.k.chats.lock(chatKey{ov.id, chatID})
		defer unlock()
		if _, err := ov.loadChat(chatID); err != nil {
			return err
		}
		d, ok, err := ov.ws.Draft(chatID)
		if err != nil || !ok {
			return cmp.Or(err, error(fail(CodeFailedPrecondition, "rejectDraft: chat %s has no draft", chatID)))
		}
		names := make([]string, 0, len(d.Gadgets))
		for _, g := range d.Gadgets {
			names = append(names, g.Name)
		}
		slices.Sort(names)
		if err := ov.write(ctx, store.DeleteDraft(chatID), auditEntry(w.p, "chat.rejectDraft", chatID, strings.Join(names, ", "))); err != nil {
			return wrapErr(err, "rejectDraft")
		}
		notice = fmt.Sprintf("%s rejected the draft (gadgets %s); nothing was deployed.", w.p.username, strings.Join(names, ", "))
		return nil
	})
	w.draftDecided(ctx, chatID, notice)
	return err
}

// draftDecided tells the chat (a notice, when there is one) and its subscribers what became
// of the draft.
func (w *Workspace) draftDecided(ctx context.Context, chatID, notice string) {
	if notice == "" {
		return
	}
	_ = w.k.withCachedOverseer(ctx, w.id, &w.ov, func(ov *overseer) error {
		if _, err := ov.appendMessage(ctx, chatID, ChatMessage{Role: ChatNotice, Author: "host", Text: notice}); err != nil {
			w.k.log.Warn("draft notice not stored", "chat", chatID, "err", err)
		}
		d, _, err := ov.ws.Draft(chatID)
		if err == nil {
			ov.publishDraft(ctx, chatID, d)
		}
		return nil
	})
}
