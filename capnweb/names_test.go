package capnweb

import "testing"

func TestJSName(t *testing.T) {
	for in, want := range map[string]string{
		"MakeCounter": "makeCounter", "ID": "id", "HTTPGet": "httpGet", "X": "x", "GetUserIds": "getUserIds",
		"already": "already",
	} {
		if got := jsName(in); got != want {
			t.Errorf("jsName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	got := normalizePath([]any{"a", 1, int64(2), 3.0, true})
	want := []any{"a", 1.0, 2.0, 3.0, "true"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("normalizePath = %#v, want %#v", got, want)
		}
	}
}
