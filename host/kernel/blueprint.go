package kernel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"time"

	"atelier/host/quota"
	"atelier/host/store"
)

// BlueprintInfo describes a blueprint to its owner.
type BlueprintInfo struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Grants      []string  `json:"grants"`
	Bindings    []string  `json:"bindings"`
	Created     time.Time `json:"created"`
}

func blueprintInfo(b store.Blueprint) BlueprintInfo {
	return BlueprintInfo{ID: b.ID, Title: b.Title, Description: b.Description, Grants: b.Grants, Bindings: b.Bindings, Created: b.Created}
}

const maxDescription = 4096

func validBlueprintText(title, description string) error {
	if err := validTitle("blueprint title", title, 128); err != nil {
		return err
	}
	if len(description) > maxDescription {
		return fail(CodeInvalidArgument, "blueprint description of %d bytes: at most %d", len(description), maxDescription)
	}
	return nil
}

// PublishBlueprint publishes gadget's current code, grants and binding names (no data) as a
// blueprint of the caller's, and returns its id. Grants the runtime cannot provide, kept from
// before grants were checked, are left out (usableGrants).
func (w *Workspace) PublishBlueprint(ctx context.Context, gadget, title, description string) (string, error) {
	if err := validBlueprintText(title, description); err != nil {
		return "", err
	}
	var bp store.Blueprint
	err := w.Gadget(gadget).enter(ctx, store.RoleBuild, "publishBlueprint", func(ov *overseer, rec store.Gadget) error {
		v, ok := rec.CurrentVersion()
		if !ok {
			return fail(CodeInternal, "gadget %s has no current version", rec.Name)
		}
		code, err := w.k.st.Code(ctx, v.SHA256)
		if err != nil {
			return err
		}
		bp = store.Blueprint{ID: store.NewID("bp"), Owner: w.p.userID, Title: title, Description: description,
			Grants: w.k.usableGrants(rec.Grants), Bindings: slices.Sorted(maps.Keys(rec.Bindings)), SHA256: v.SHA256, Size: v.Size, Created: time.Now().UTC()}
		if bp.Bindings == nil {
			bp.Bindings = []string{}
		}
		if err := w.k.putBlueprint(ctx, bp, code); err != nil {
			return err
		}
		return ov.audit(ctx, w.p, "blueprint.publish", rec.Name, bp.ID+" "+title)
	})
	if err != nil {
		return "", wrapErr(err, "publish blueprint")
	}
	return bp.ID, nil
}

// putBlueprint stores a blueprint of its owner's, within the owner's stored_bytes quota.
func (k *Kernel) putBlueprint(ctx context.Context, bp store.Blueprint, code []byte) error {
	return k.charge(ctx, bp.Owner, quota.Limits{StoredBytes: int64(len(code))}, func() error { return k.st.PutBlueprint(ctx, bp, code) })
}

// ListBlueprints lists the caller's blueprints (an agent sees its owner's).
func (w *Workspace) ListBlueprints(ctx context.Context) ([]BlueprintInfo, error) {
	out := []BlueprintInfo{}
	err := w.enter(ctx, store.RoleUse, "listBlueprints", func(*overseer) error {
		bps, err := w.k.st.Blueprints(ctx, w.p.userID)
		for _, b := range bps {
			out = append(out, blueprintInfo(b))
		}
		return err
	})
	return out, err
}

// ownBlueprint returns blueprint id if it belongs to the caller (NOT_FOUND otherwise, so that
// ids of others' blueprints reveal nothing).
func (w *Workspace) ownBlueprint(ctx context.Context, id string) (store.Blueprint, []byte, error) {
	bp, err := w.k.st.Blueprint(ctx, id)
	if err != nil || bp.Owner != w.p.userID {
		return store.Blueprint{}, nil, fail(CodeNotFound, "you have no blueprint %q", id)
	}
	code, err := w.k.st.Code(ctx, bp.SHA256)
	return bp, code, err
}

// CreateGadgetFromBlueprint creates gadget name from one of the caller's blueprints. Its
// bindings start unbound.
func (w *Workspace) CreateGadgetFromBlueprint(ctx context.Context, blueprintID, name string) (*Gadget, error) {
	if err := validName("gadget", name); err != nil {
		return nil, err
	}
	var g store.Gadget
	err := w.enter(ctx, store.RoleBuild, "createGadgetFromBlueprint", func(ov *overseer) error {
		if err := w.p.checkGadget(w.id, name); err != nil {
			return err
		}
		bp, code, err := w.ownBlueprint(ctx, blueprintID)
		if err != nil {
			return err
		}
		g, err = ov.createGadget(ctx, w.p, name, code, nil, bp.Grants, "from blueprint "+bp.ID, "")
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Gadget{w: w, name: name, id: g.ID}, nil
}

// Archive entries.
const (
	archiveManifest  = "blueprint.json"
	archiveComponent = "component.wasm"
)

// archiveManifestJSON is blueprint.json in an archive.
type archiveManifestJSON struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Grants      []string `json:"grants"`
	Bindings    []string `json:"bindings"`
}

// ExportBlueprint returns one of the caller's blueprints as a single archive: a gzip'd tar
// holding blueprint.json and component.wasm.
func (w *Workspace) ExportBlueprint(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	err := w.enter(ctx, store.RoleBuild, "exportBlueprint", func(*overseer) error {
		bp, code, err := w.ownBlueprint(ctx, id)
		if err != nil {
			return err
		}
		manifest, err := json.MarshalIndent(archiveManifestJSON{Title: bp.Title, Description: bp.Description, Grants: bp.Grants, Bindings: bp.Bindings}, "", "  ")
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, f := range []struct {
			name string
			data []byte
		}{{archiveManifest, manifest}, {archiveComponent, code}} {
			if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: bp.Created, Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
		}
		if err := errors.Join(tw.Close(), zw.Close()); err != nil {
			return err
		}
		out = buf.Bytes()
		return nil
	})
	return out, wrapErr(err, "export blueprint")
}

// ImportBlueprint reads an archive made by ExportBlueprint into a new blueprint of the caller's
// and returns its id. The component is checked against the archive's grants.
func (w *Workspace) ImportBlueprint(ctx context.Context, archive []byte) (string, error) {
	var id string
	err := w.enter(ctx, store.RoleBuild, "importBlueprint", func(ov *overseer) error {
		m, code, err := readArchive(archive, w.k.cfg.MaxCode)
		if err != nil {
			return err
		}
		if err := validBlueprintText(m.Title, m.Description); err != nil {
			return err
		}
		for _, b := range m.Bindings {
			if err := validName("binding", b); err != nil {
				return err
			}
		}
		sha, err := w.k.checkCode(ctx, code, m.Grants)
		if err != nil {
			return err
		}
		if m.Bindings == nil {
			m.Bindings = []string{}
		}
		bp := store.Blueprint{ID: store.NewID("bp"), Owner: w.p.userID, Title: m.Title, Description: m.Description,
			Grants: m.Grants, Bindings: m.Bindings, SHA256: sha, Size: len(code), Created: time.Now().UTC()}
		if err := w.k.putBlueprint(ctx, bp, code); err != nil {
			return err
		}
		id = bp.ID
		return ov.audit(ctx, w.p, "blueprint.import", bp.ID, m.Title)
	})
	return id, wrapErr(err, "import blueprint")
}

// readArchive unpacks an archive, refusing anything but the two expected regular files and
// anything larger than the limits.
func readArchive(archive []byte, maxCode int) (archiveManifestJSON, []byte, error) {
	var m archiveManifestJSON
	bad := func(format string, args ...any) (archiveManifestJSON, []byte, error) {
		return m, nil, fail(CodeInvalidArgument, "blueprint archive: "+format, args...)
	}
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return bad("not a gzip'd tar: %v", err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("%v", err)
		}
		limit := int64(maxCode)
		if h.Name == archiveManifest {
			limit = maxDescription + 64<<10
		} else if h.Name != archiveComponent {
			return bad("unexpected entry %.100q (want only %s and %s)", h.Name, archiveManifest, archiveComponent)
		}
		if h.Typeflag != tar.TypeReg || h.Size > limit || files[h.Name] != nil {
			return bad("entry %s: want one regular file of at most %d bytes", h.Name, limit)
		}
		data, err := io.ReadAll(io.LimitReader(tr, limit+1))
		if err != nil || int64(len(data)) != h.Size {
			return bad("entry %s is truncated", h.Name)
		}
		files[h.Name] = data
	}
	if files[archiveManifest] == nil || files[archiveComponent] == nil {
		return bad("want both %s and %s", archiveManifest, archiveComponent)
	}
	if err := json.Unmarshal(files[archiveManifest], &m); err != nil {
		return bad("%s: %v", archiveManifest, err)
	}
	return m, files[archiveComponent], nil
}
