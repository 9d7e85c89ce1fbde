// Package vault keeps gatekeeper credentials encrypted at rest: AES-256-GCM with a key kept in
// its own file (mode 0600, never inside the data file that stores the sealed credentials).
// Each sealed value is bound to a context string (the account and credential it belongs to)
// as additional authenticated data, so a sealed credential copied to another account's record
// does not open.
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeySize is the size of a key file in bytes (AES-256).
const KeySize = 32

// ErrOpen is returned when a sealed value does not open: a wrong key, a wrong context or
// tampered bytes.
var ErrOpen = errors.New("vault: sealed value does not open with this key and context")

// Box seals and opens values with one key. It is safe for concurrent use.
type Box struct{ aead cipher.AEAD }

// New returns a Box for a KeySize-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("vault: key of %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return &Box{aead: aead}, nil
}

// LoadKey reads the key file at path, creating it with a fresh random key (mode 0600, its
// directory 0700) when it does not exist. A key file readable or writable by group or others,
// or of the wrong size, is refused.
func LoadKey(path string) (*Box, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("vault: read key file: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("vault: key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("vault: key file %s has mode %v; it must be accessible to its owner only (chmod 600)", path, st.Mode().Perm())
	}
	return New(key)
}

func createKey(path string) (*Box, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("vault: create key directory: %w", err)
	}
	key := make([]byte, KeySize)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("vault: create key file: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, fmt.Errorf("vault: write key file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("vault: write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("vault: write key file: %w", err)
	}
	return New(key)
}

// Seal encrypts plaintext for context (for example "credential/alice/notes/token") and returns
// nonce || ciphertext.
func (b *Box) Seal(plaintext []byte, context string) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	rand.Read(nonce) // never fails (Go 1.24+ crashes the program instead)
	return b.aead.Seal(nonce, nonce, plaintext, []byte(context))
}

// Open decrypts what Seal returned for the same context, or returns ErrOpen.
func (b *Box) Open(sealed []byte, context string) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], []byte(context))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
