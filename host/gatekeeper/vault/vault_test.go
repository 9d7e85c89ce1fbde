package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "vault.key")
	b, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != KeySize {
		t.Fatalf("key file: %v %v", st.Mode(), err)
	}
	secret := []byte("alice-tok-7f3c9e1d2b5a4c68")
	sealed := b.Seal(secret, "credential/alice/notes/token")
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed value contains the plaintext")
	}
	// Reloading the key file opens what was sealed.
	b2, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b2.Open(sealed, "credential/alice/notes/token"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q %v", got, err)
	}
	// Another account's context, tampering, truncation and another key fail.
	other, _ := LoadKey(filepath.Join(dir, "other.key"))
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"other context": func() ([]byte, error) { return b.Open(sealed, "credential/bob/notes/token") },
		"tampered":      func() ([]byte, error) { return b.Open(tampered, "credential/alice/notes/token") },
		"truncated":     func() ([]byte, error) { return b.Open(sealed[:10], "credential/alice/notes/token") },
		"other key":     func() ([]byte, error) { return other.Open(sealed, "credential/alice/notes/token") },
	} {
		if _, err := open(); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: got %v, want ErrOpen", name, err)
		}
	}
}

func TestKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.key")
	os.WriteFile(loose, make([]byte, KeySize), 0o644)
	if _, err := LoadKey(loose); err == nil {
		t.Fatal("a key file readable by others was accepted")
	}
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, make([]byte, 16), 0o600)
	if _, err := LoadKey(short); err == nil {
		t.Fatal("a 16-byte key file was accepted")
	}
}
