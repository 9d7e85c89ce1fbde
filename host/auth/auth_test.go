package auth

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse", TestParams)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Verify("correct horse") {
		t.Fatal("the right password was refused")
	}
	for _, bad := range []string{"", "correct hors", "correct horse ", "Correct horse"} {
		if h.Verify(bad) {
			t.Fatalf("password %q was accepted", bad)
		}
	}
	h2, _ := HashPassword("correct horse", TestParams)
	if string(h2.Salt) == string(h.Salt) || string(h2.Key) == string(h.Key) {
		t.Fatal("two hashes of one password share a salt or key")
	}
	if (PasswordHash{}).Verify("") {
		t.Fatal("an empty hash matched the empty password")
	}
}

func TestTokens(t *testing.T) {
	tok, hash, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || strings.Contains(hash, tok) {
		t.Fatalf("token %q hash %q", tok, hash)
	}
	got, err := CheckToken(tok)
	if err != nil || !Equal(got, hash) {
		t.Fatalf("CheckToken(fresh token) = %q, %v", got, err)
	}
	for _, bad := range []string{"", "atl_", "xyz_" + tok[4:], tok + "A", tok[:len(tok)-1] + "*", strings.Repeat("a", 1<<16)} {
		if _, err := CheckToken(bad); err != ErrMalformedToken {
			t.Errorf("CheckToken(%.20q...) = %v, want ErrMalformedToken", bad, err)
		}
	}
}
