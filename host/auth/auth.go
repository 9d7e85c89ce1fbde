// Package auth holds Atelier's credential primitives: argon2id password hashes with a per-user
// random salt, opaque bearer tokens ("atl_" + base64url of 32 random bytes) that are stored
// only as their SHA-256, and constant-time comparisons. It knows nothing of users or storage.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// TokenPrefix starts every token, so that leaked tokens are easy to recognise and scan for.
const TokenPrefix = "atl_"

// Params are argon2id's cost parameters. They are stored with every hash, so that changing them
// affects new hashes only.
type Params struct {
	// Time is the number of passes over memory.
	Time uint32 `json:"t"`
	// MemoryKiB is the memory used, in KiB.
	MemoryKiB uint32 `json:"m"`
	// Threads is the parallelism.
	Threads uint8 `json:"p"`
}

// DefaultParams follow the second recommendation of RFC 9106 (section 4) scaled to a server
// that hashes on login only: 3 passes over 64 MiB with 2 lanes, about 50-100 ms per hash.
var DefaultParams = Params{Time: 3, MemoryKiB: 64 << 10, Threads: 2}

// TestParams are cheap parameters for tests; never use them for real passwords.
var TestParams = Params{Time: 1, MemoryKiB: 64, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
)

// PasswordHash is a salted argon2id hash of a password and the parameters that made it.
type PasswordHash struct {
	Params Params `json:"params"`
	Salt   []byte `json:"salt"`
	Key    []byte `json:"key"`
}

// HashPassword hashes password with a fresh random salt.
func HashPassword(password string, p Params) (PasswordHash, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return PasswordHash{}, fmt.Errorf("hash password: %w", err)
	}
	return PasswordHash{Params: p, Salt: salt, Key: derive(password, salt, p)}, nil
}

// Verify reports whether password matches h, in time independent of where they differ. An
// empty hash (a user without a password) matches nothing.
func (h PasswordHash) Verify(password string) bool {
	if len(h.Key) == 0 || len(h.Salt) == 0 {
		return false
	}
	return subtle.ConstantTimeCompare(derive(password, h.Salt, h.Params), h.Key) == 1
}

func derive(password string, salt []byte, p Params) []byte {
	return argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
}

// NewToken returns a fresh random token and the hash under which it is stored.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("new token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// ErrMalformedToken is returned by CheckToken for a string that cannot be a token.
var ErrMalformedToken = errors.New("malformed token: want atl_ followed by 43 base64url characters")

// CheckToken returns the storage hash of token, or ErrMalformedToken when it is not shaped like
// one (checked before any lookup, so that junk never reaches the store).
func CheckToken(token string) (string, error) {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok || len(rest) != 43 {
		return "", ErrMalformedToken
	}
	if b, err := base64.RawURLEncoding.DecodeString(rest); err != nil || len(b) != 32 {
		return "", ErrMalformedToken
	}
	return HashToken(token), nil
}

// HashToken returns the hex SHA-256 of a token (or share-link key): what the store keeps.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Equal compares two secrets (or their hashes) in constant time.
func Equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
