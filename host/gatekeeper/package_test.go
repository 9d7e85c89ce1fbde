package gatekeeper

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// component is the smallest thing that passes Open's header check (Install compiles it).
var component = []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}

func manifest() Manifest {
	return Manifest{
		Name: "notes", Version: "1.0.0", Vendor: "Example", World: World,
		Egress:      Egress{Schemes: []string{"https"}, Hosts: []string{"api.notes.example"}},
		Credentials: []Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources: []ResourcePattern{{
			Kind: "notebook", URLPattern: "https://notes.example/notebooks/:nb",
			Egress: []string{"https://api.notes.example/v1/notebooks/:nb"},
		}},
		AutoApprovable: []string{"add-note"},
	}
}

func tarOf(t *testing.T, files ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i < len(files); i += 2 {
		h := files[i].(*tar.Header)
		data := files[i+1].([]byte)
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return buf.Bytes()
}

func TestPackOpen(t *testing.T) {
	archive, err := Pack(manifest(), component)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Pack(manifest(), component)
	if !bytes.Equal(archive, again) {
		t.Fatal("Pack is not reproducible")
	}
	p, err := Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest.Name != "notes" || !bytes.Equal(p.Wasm, component) || !strings.HasPrefix(p.Digest, "sha256:") {
		t.Fatalf("opened %+v", p)
	}
}

func TestOpenRefuses(t *testing.T) {
	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg} }
	good := rawArchive(t, manifest(), component)
	if _, err := Open(good); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(good))
	tr.Next()
	manifestBytes, _ := io.ReadAll(tr)
	wrongWorld := manifest()
	wrongWorld.World = "atelier:gadget/gadget@0.1.0"
	for _, c := range []struct {
		name    string
		archive []byte
		want    error
	}{
		{"not a tar", []byte("hello"), ErrBadArchive},
		{"empty", nil, ErrBadArchive},
		{"oversize", make([]byte, MaxArchiveSize+1), ErrTooLarge},
		{"extra file", tarOf(t, reg(ManifestFile), manifestBytes, reg(WasmFile), component, reg("evil.sh"), []byte("x")), ErrBadArchive},
		{"no wasm", tarOf(t, reg(ManifestFile), manifestBytes), ErrBadArchive},
		{"duplicate", tarOf(t, reg(ManifestFile), manifestBytes, reg(ManifestFile), manifestBytes, reg(WasmFile), component), ErrBadArchive},
		{"symlink", tarOf(t, reg(ManifestFile), manifestBytes, &tar.Header{Name: WasmFile, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, []byte{}), ErrBadArchive},
		{"oversize manifest", tarOf(t, reg(ManifestFile), make([]byte, MaxManifestSize+1), reg(WasmFile), component), ErrTooLarge},
		{"manifest not JSON", tarOf(t, reg(ManifestFile), []byte("{"), reg(WasmFile), component), ErrBadManifest},
		{"unknown field", tarOf(t, reg(ManifestFile), []byte(`{"name":"x","shell":"rm -rf"}`), reg(WasmFile), component), ErrBadManifest},
		{"wrong hash", tarOf(t, reg(ManifestFile), manifestBytes, reg(WasmFile), append(bytes.Clone(component), 0)), ErrHashMismatch},
		{"core module", rawArchive(t, manifest(), []byte{0, 'a', 's', 'm', 1, 0, 0, 0}), ErrNotComponent},
		{"wrong world", rawArchive(t, wrongWorld, component), ErrBadManifest},
	} {
		_, err := Open(c.archive)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// rawArchive writes an archive of m (with wasm's hash) and wasm without validating m.
func rawArchive(t *testing.T, m Manifest, wasm []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(wasm)
	m.Component.SHA256 = hex.EncodeToString(sum[:])
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg} }
	return tarOf(t, reg(ManifestFile), data, reg(WasmFile), wasm)
}
