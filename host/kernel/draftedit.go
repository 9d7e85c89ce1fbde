package kernel

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"atelier/host/kernel/internal/diff"
	"atelier/host/store"
)

// The agent's code changes go into its chat's draft (store.Draft), never into a running
// gadget: the files it wrote, each with the content of the base version it was based on, and
// the new gadgets it made. A person accepts the draft (acceptDraft, draft.go) or rejects it.
//
// Rebasing: when a gadget's current version moves after the draft was based on it, the draft
// is stale for that gadget and acceptDraft refuses it. The next readFile, writeFile or
// editFile of that gadget by the agent rebases it: files the draft did not change follow the
// new version (the draft holds only the files it changed), files it changed keep the draft's
// content on the new version's base, and a notice in the chat lists those so the agent
// re-checks them.

// Bounds of a draft, beyond a JS gadget's own (maxJSFiles files, Config.MaxCode bytes).
const (
	maxDraftGadgets = 16      // gadgets a draft changes or creates
	maxDraftBytes   = 8 << 20 // bytes of a draft's files, base and new (and at most MaxCode)
)

// gadgetSources returns the files of gadget g's current version: a JS gadget's sources and
// its UI script (ClientFile). A component has none to edit.
func (k *Kernel) gadgetSources(ctx context.Context, g store.Gadget) (map[string]string, error) {
	v, ok := g.CurrentVersion()
	if !ok {
		return nil, fail(CodeInternal, "gadget %s has no current version", g.Name)
	}
	code, err := k.st.Code(ctx, v.SHA256)
	if err != nil {
		return nil, wrapErr(err, "read the code of gadget %s", g.Name)
	}
	if !isBundle(code) {
		return nil, fail(CodeFailedPrecondition, "gadget %s is a compiled component: it has no sources to read or edit here (create a JS gadget instead)", g.Name)
	}
	files, err := unpackBundle(code, k.cfg.MaxCode)
	if err != nil {
		return nil, wrapErr(err, "read the sources of gadget %s", g.Name)
	}
	if v.Client != "" {
		src, err := k.st.Code(ctx, v.Client)
		if err != nil {
			return nil, wrapErr(err, "read the %s of gadget %s", ClientFile, g.Name)
		}
		files[ClientFile] = string(src)
	}
	return files, nil
}

// checkSource refuses a file the draft may not hold.
func (k *Kernel) checkSource(file, content string) error {
	if err := validFileName(file); err != nil {
		return err
	}
	if file == ClientFile {
		return checkClient(content)
	}
	if !utf8.ValidString(content) {
		return fail(CodeInvalidArgument, "file %s is not UTF-8 text", file)
	}
	if len(content) > k.cfg.MaxCode {
		return fail(CodeResourceExhausted, "file %s of %d bytes: at most %d", file, len(content), k.cfg.MaxCode)
	}
	return nil
}

// draftTarget is a gadget as the draft sees it while one tool call changes it.
type draftTarget struct {
	entry *store.DraftGadget // the draft's entry (nil: none yet)
	// rec and base are the existing gadget and its current sources (rec.ID "" for a new one).
	rec  store.Gadget
	base map[string]string
}

// file returns the target's file as the draft has it, else as the gadget has it.
func (t *draftTarget) file(name string) (string, bool) {
	if t.entry != nil {
		for _, f := range t.entry.Files {
			if f.Name == name {
				return f.Content, true
			}
		}
	}
	src, ok := t.base[name]
	return src, ok
}

// names lists the target's files.
func (t *draftTarget) names() []string {
	set := maps.Clone(t.base)
	if set == nil {
		set = map[string]string{}
	}
	if t.entry != nil {
		for _, f := range t.entry.Files {
			set[f.Name] = f.Content
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// target finds gadget name in draft d or the workspace, rebasing a stale entry (its notice,
// if any, is returned for the chat).
func (r *agentRun) target(ctx context.Context, ov *overseer, d *store.Draft, name string) (*draftTarget, string, error) {
	for i := range d.Gadgets {
		if d.Gadgets[i].Gadget == "" && d.Gadgets[i].Name == name {
			return &draftTarget{entry: &d.Gadgets[i]}, "", nil
		}
	}
	g, err := ov.gadgetByName(name)
	if err != nil {
		return nil, "", fail(CodeNotFound, "workspace %s has no gadget %.70q, and the draft creates none of that name", ov.id, name)
	}
	base, err := r.w.k.gadgetSources(ctx, g)
	if err != nil {
		return nil, "", err
	}
	t := &draftTarget{rec: g, base: base}
	for i := range d.Gadgets {
		if d.Gadgets[i].Gadget == g.ID {
			t.entry = &d.Gadgets[i]
		}
	}
	notice := ""
	if t.entry != nil && t.entry.Base != g.Current {
		notice = rebase(t.entry, g, base)
	}
	return t, notice, nil
}

// rebase moves a stale entry onto gadget g's current version and returns the notice that
// lists the files the agent must re-check.
func rebase(e *store.DraftGadget, g store.Gadget, base map[string]string) string {
	from := e.Base
	var moved []string
	for i := range e.Files {
		f := &e.Files[i]
		src, ok := base[f.Name]
		if f.Base == nil && !ok || f.Base != nil && ok && *f.Base == src {
			continue
		}
		moved = append(moved, f.Name)
		if ok {
			f.Base = &src
		} else {
			f.Base = nil
		}
	}
	e.Base, e.Name = g.Current, g.Name
	msg := fmt.Sprintf("Gadget %s moved from version %d to %d since the draft was based on it; the draft is now based on version %d.", g.Name, from, g.Current, g.Current)
	if len(moved) > 0 {
		msg += " The draft keeps its own content of files that changed in the new version too; re-check them: " + strings.Join(moved, ", ") + "."
	}
	return msg
}

// set puts content as file of the target in the draft (dropping a file equal to its base,
// and an existing gadget's entry that holds no files any more).
func (t *draftTarget) set(d *store.Draft, file, content string) {
	if t.entry == nil {
		d.Gadgets = append(d.Gadgets, store.DraftGadget{Gadget: t.rec.ID, Name: t.rec.Name, Base: t.rec.Current})
		t.entry = &d.Gadgets[len(d.Gadgets)-1]
	}
	e := t.entry
	i := slices.IndexFunc(e.Files, func(f store.DraftFile) bool { return f.Name == file })
	if i < 0 {
		f := store.DraftFile{Name: file, Content: content}
		if src, ok := t.base[file]; ok {
			f.Base = &src
		}
		e.Files = append(e.Files, f)
		i = len(e.Files) - 1
	}
	e.Files[i].Content = content
	if b := e.Files[i].Base; e.Gadget != "" && b != nil && *b == content {
		e.Files = slices.Delete(e.Files, i, i+1)
	}
	if e.Gadget != "" && len(e.Files) == 0 {
		id := e.Gadget
		d.Gadgets = slices.DeleteFunc(d.Gadgets, func(g store.DraftGadget) bool { return g.Gadget == id })
		t.entry = nil
	}
}

// changeDraft runs fn on the chat's draft under the chat's lock, then checks the draft's
// bounds, stores it and publishes it: always when write is set, else when fn rebased it (fn's
// notice, which is added to the chat).
func (r *agentRun) changeDraft(ctx context.Context, ov *overseer, write bool, fn func(d *store.Draft) (notice string, err error)) error {
	k := r.w.k
	unlock := k.chats.lock(chatKey{ov.id, r.chatID})
	d, ok, err := ov.ws.Draft(r.chatID)
	if err == nil && !ok {
		d = store.Draft{Chat: r.chatID}
	}
	var notice string
	if err == nil {
		notice, err = fn(&d)
	}
	write = write || notice != ""
	if err == nil && write {
		err = k.checkDraft(d)
	}
	if err == nil {
		d.Updated = time.Now().UTC()
		mut := store.PutDraft(d)
		if len(d.Gadgets) == 0 {
			mut = store.DeleteDraft(r.chatID)
		}
		err = ov.write(ctx, mut)
	}
	unlock()
	if notice != "" {
		if _, nerr := ov.appendMessage(ctx, r.chatID, ChatMessage{Role: ChatNotice, Author: "host", Text: notice}); nerr != nil {
			k.log.Warn("rebase notice not stored", "chat", r.chatID, "err", nerr)
		}
	}
	if err != nil || !write {
		return err
	}
	ov.publishDraft(ctx, r.chatID, d)
	return nil
}

// checkDraft refuses a draft past its bounds.
func (k *Kernel) checkDraft(d store.Draft) error {
	if len(d.Gadgets) > maxDraftGadgets {
		return fail(CodeResourceExhausted, "the draft would change or create %d gadgets: at most %d; ask the user to accept or reject it first", len(d.Gadgets), maxDraftGadgets)
	}
	for _, g := range d.Gadgets {
		if len(g.Files) > maxJSFiles {
			return fail(CodeResourceExhausted, "the draft holds %d files of gadget %s: at most %d", len(g.Files), g.Name, maxJSFiles)
		}
	}
	if limit := min(maxDraftBytes, k.cfg.MaxCode); d.Size() > limit {
		return fail(CodeResourceExhausted, "the draft would hold %d bytes of files (with their base versions): at most %d; ask the user to accept or reject it first", d.Size(), limit)
	}
	return nil
}

// ReadFile implements ChatRun. A gadget's server sources need the build role (no API shows
// them to a use collaborator); its UI script, which the browser loads, needs use.
func (r *agentRun) ReadFile(ctx context.Context, gadget, file string) (string, error) {
	var out string
	need := store.RoleBuild
	if file == ClientFile {
		need = store.RoleUse
	}
	err := r.tool(ctx, need, "readFile", gadget+"/"+file, func(ov *overseer) error {
		return r.changeDraft(ctx, ov, false, func(d *store.Draft) (string, error) {
			t, notice, err := r.target(ctx, ov, d, gadget)
			if err == nil {
				out, err = t.read(gadget, file)
			}
			return notice, err
		})
	})
	return out, err
}

// read returns file of the target, or NOT_FOUND listing its files.
func (t *draftTarget) read(gadget, file string) (string, error) {
	src, ok := t.file(file)
	if !ok {
		return "", fail(CodeNotFound, "gadget %s has no file %.70q; its files: %s", gadget, file, strings.Join(t.names(), ", "))
	}
	return src, nil
}

// WriteFile implements ChatRun (build role: the agent of a use collaborator cannot draft).
func (r *agentRun) WriteFile(ctx context.Context, gadget, file, content string) (DraftFile, error) {
	return r.edit(ctx, "writeFile", gadget, file, func(string, bool) (string, error) { return content, nil })
}

// EditFile implements ChatRun: exactly one occurrence of old is replaced by new.
func (r *agentRun) EditFile(ctx context.Context, gadget, file, old, new string) (DraftFile, error) {
	return r.edit(ctx, "editFile", gadget, file, func(cur string, ok bool) (string, error) {
		if !ok {
			return "", fail(CodeNotFound, "gadget %s has no file %.70q to edit; use writeFile to create it", gadget, file)
		}
		if old == "" {
			return "", fail(CodeInvalidArgument, "editFile: old is empty; give the exact text to replace")
		}
		switch n := strings.Count(cur, old); n {
		case 1:
			return strings.Replace(cur, old, new, 1), nil
		case 0:
			return "", fail(CodeInvalidArgument, "editFile: old was found 0 times in %s/%s; readFile it and copy the text exactly", gadget, file)
		default:
			return "", fail(CodeInvalidArgument, "editFile: old was found %d times in %s/%s; include more of the surrounding text so that it occurs once", n, gadget, file)
		}
	})
}

// edit changes file of gadget in the draft to what change makes of its current content.
func (r *agentRun) edit(ctx context.Context, what, gadget, file string, change func(cur string, ok bool) (string, error)) (DraftFile, error) {
	var out DraftFile
	err := r.tool(ctx, store.RoleBuild, what, gadget+"/"+file, func(ov *overseer) error {
		return r.changeDraft(ctx, ov, true, func(d *store.Draft) (string, error) {
			t, notice, err := r.target(ctx, ov, d, gadget)
			if err != nil {
				return "", err
			}
			cur, ok := t.file(file)
			content, err := change(cur, ok)
			if err == nil {
				err = r.w.k.checkSource(file, content)
			}
			if err != nil {
				return notice, err
			}
			t.set(d, file, content)
			out = draftFileOf(diff.NewBudget(diffSteps), gadget, file, t.baseOf(file), content)
			return notice, nil
		})
	})
	return out, err
}

// baseOf returns the base content of file (nil: the base has no such file).
func (t *draftTarget) baseOf(file string) *string {
	if src, ok := t.base[file]; ok {
		return &src
	}
	return nil
}

// CreateGadget implements ChatRun: a new gadget in the draft, of files or from one of the
// user's blueprints.
func (r *agentRun) CreateGadget(ctx context.Context, name string, files map[string]string, blueprint string) error {
	if err := validName("gadget", name); err != nil {
		return err
	}
	if (len(files) == 0) == (blueprint == "") {
		return fail(CodeInvalidArgument, "createGadget: give either the files of a JS gadget or a blueprint id, not both")
	}
	if len(files) > maxJSFiles {
		return fail(CodeResourceExhausted, "createGadget: %d files: at most %d", len(files), maxJSFiles)
	}
	for f, src := range files {
		if err := r.w.k.checkSource(f, src); err != nil {
			return err
		}
	}
	return r.tool(ctx, store.RoleBuild, "createGadget", name, func(ov *overseer) error {
		if _, err := ov.gadgetByName(name); err == nil {
			return fail(CodeConflict, "createGadget: workspace %s has a gadget %s already; edit it, or pick another name", ov.id, name)
		}
		if blueprint != "" {
			if _, _, err := r.w.ownBlueprint(ctx, blueprint); err != nil {
				return err
			}
		}
		return r.changeDraft(ctx, ov, true, func(d *store.Draft) (string, error) {
			if slices.ContainsFunc(d.Gadgets, func(g store.DraftGadget) bool { return g.Gadget == "" && g.Name == name }) {
				return "", fail(CodeConflict, "createGadget: the draft creates a gadget %s already; write its files instead", name)
			}
			e := store.DraftGadget{Name: name, Blueprint: blueprint}
			for _, f := range slices.Sorted(maps.Keys(files)) {
				e.Files = append(e.Files, store.DraftFile{Name: f, Content: files[f]})
			}
			d.Gadgets = append(d.Gadgets, e)
			return "", nil
		})
	})
}
