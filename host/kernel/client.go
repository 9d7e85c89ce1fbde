package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"atelier/host/store"
)

// A gadget's browser UI is one script, client.js, that the web shell runs in a sandboxed
// frame. It belongs to a code version (store.Version.Client, a code blob): setClient makes a
// new version with the same code and the new script, a deploy keeps the current script unless
// the upload brings its own client.js, and a rollback brings back the script of the version
// it returns to.

// Bounds of a UI script.
const (
	// MaxClient is the largest UI script (1 MiB).
	MaxClient = 1 << 20
	// ClientFile is the file of a JS gadget's upload that is its UI script, not server code.
	ClientFile = "client.js"
)

// ClientScript is a gadget's UI script as Gadget.Client returns it.
type ClientScript struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
}

// checkClient refuses a UI script that is too large or not UTF-8 text.
func checkClient(source string) error {
	if len(source) > MaxClient {
		return fail(CodeInvalidArgument, "%s of %d bytes: at most %d", ClientFile, len(source), MaxClient)
	}
	if !utf8.ValidString(source) {
		return fail(CodeInvalidArgument, "%s is not UTF-8 text", ClientFile)
	}
	return nil
}

// takeClient removes the UI script from a JS gadget's files and returns it (nil: none).
func takeClient(files map[string]string) (*string, error) {
	src, ok := files[ClientFile]
	if !ok {
		return nil, nil
	}
	delete(files, ClientFile)
	if err := checkClient(src); err != nil {
		return nil, err
	}
	return &src, nil
}

// readUpload turns the code and client arguments of createGadget and deploy into the code to
// store and the version's UI script (nil: keep the current one, or none for a new gadget). A
// JS gadget's files may bring client.js, or the client argument may; not both.
func (k *Kernel) readUpload(code any, client *string) ([]byte, *string, error) {
	bin, fromFiles, err := k.normalizeCode(code)
	if err != nil || client == nil {
		return bin, fromFiles, err
	}
	if fromFiles != nil {
		return nil, nil, fail(CodeInvalidArgument, "the files hold a %s and a client script was given too: pass one", ClientFile)
	}
	if err := checkClient(*client); err != nil {
		return nil, nil, err
	}
	return bin, client, nil
}

// clientBlob returns the hash under which source is stored, and the mutation that stores it
// ("" and none for an empty script: no UI).
func clientBlob(source string) (string, []store.Mutation) {
	if source == "" {
		return "", nil
	}
	return codeHash([]byte(source)), []store.Mutation{store.PutCode([]byte(source))}
}

// versionClient is the UI script hash of a new version: the upload's when it brought one,
// else the one of the version that was current.
func versionClient(g *store.Gadget, upload *string) (string, []store.Mutation) {
	if upload != nil {
		return clientBlob(*upload)
	}
	cur, _ := g.CurrentVersion()
	return cur.Client, nil
}

// SetClient stores source as the gadget's UI script (an empty source removes it), as a new
// version with the current code; it returns the gadget's info. Role build.
func (g *Gadget) SetClient(ctx context.Context, source string) (info GadgetInfo, err error) {
	if err := checkClient(source); err != nil {
		return info, wrapErr(err, "set the UI of %s", g.name)
	}
	err = g.enter(ctx, store.RoleBuild, "setClient", func(ov *overseer, rec store.Gadget) error {
		rec, err := ov.setClient(ctx, g.w.p, rec.ID, source)
		info = ov.infoOf(rec)
		return err
	})
	return info, wrapErr(err, "set the UI of %s", g.name)
}

// Client returns the current version's UI script, or nil when it has none. Role use.
func (g *Gadget) Client(ctx context.Context) (script *ClientScript, err error) {
	err = g.enter(ctx, store.RoleUse, "client", func(ov *overseer, rec store.Gadget) error {
		v, ok := rec.CurrentVersion()
		if !ok || v.Client == "" {
			return nil
		}
		src, err := ov.k.st.Code(ctx, v.Client)
		if err != nil {
			return wrapErr(err, "read the UI of %s", rec.Name)
		}
		script = &ClientScript{Source: string(src), SHA256: v.Client}
		return nil
	})
	return script, err
}

// errUnchanged stops an update that would change nothing.
var errUnchanged = errors.New("unchanged")

// setClient makes a new current version with the current code and UI script source. The
// instance keeps running: its code did not change.
func (ov *overseer) setClient(ctx context.Context, p *principal, id store.GadgetID, source string) (store.Gadget, error) {
	g, err := ov.updateGadget(ctx, p, id, "gadget.setClient", false, func(g *store.Gadget) ([]store.Mutation, string, error) {
		cur, ok := g.CurrentVersion()
		if !ok {
			return nil, "", fail(CodeInternal, "gadget %s has no current version %d", g.Name, g.Current)
		}
		sha, muts := clientBlob(source)
		if sha == cur.Client {
			return nil, "", errUnchanged
		}
		next := g.Versions[len(g.Versions)-1].Number + 1
		g.Versions = append(g.Versions, store.Version{Number: next, SHA256: cur.SHA256, Size: cur.Size, Client: sha, Created: time.Now().UTC()})
		g.Current = next
		detail := fmt.Sprintf("version %d, %s removed", next, ClientFile)
		if sha != "" {
			detail = fmt.Sprintf("version %d, %s sha256:%.12s (%d bytes)", next, ClientFile, sha, len(source))
		}
		return muts, detail, nil
	})
	if errors.Is(err, errUnchanged) {
		return ov.gadget(id)
	}
	return g, err
}
