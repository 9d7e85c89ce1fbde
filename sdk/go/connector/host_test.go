package connector

import (
	"encoding/json"
	"testing"
)

func TestResponseHeader(t *testing.T) {
	r := &Response{Headers: []Header{{"Content-Type", "text/plain"}, {"X-Twice", "first"}, {"x-twice", "second"}}}
	for name, want := range map[string]string{"content-type": "text/plain", "CONTENT-TYPE": "text/plain", "X-TWICE": "first", "Missing": "", "": ""} {
		if got := r.Header(name); got != want {
			t.Errorf("Header(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestFetchErrorKinds: the names are the WIT cases (the Extism host's kinds), Parse inverts
// String, and neither accepts what is not a case.
func TestFetchErrorKinds(t *testing.T) {
	for k, name := range map[FetchErrorKind]string{Denied: "denied", Invalid: "invalid", TooLarge: "too-large", Failed: "failed"} {
		if k.String() != name {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), name)
		}
		if got, ok := ParseFetchErrorKind(name); !ok || got != k {
			t.Errorf("ParseFetchErrorKind(%q) = %d, %v", name, got, ok)
		}
	}
	for _, name := range []string{"", "Denied", "too large", "refused"} {
		if k, ok := ParseFetchErrorKind(name); ok {
			t.Errorf("ParseFetchErrorKind(%q) = %d, want none", name, k)
		}
	}
	if got := FetchErrorKind(9).String(); got != "fetch error kind 9" {
		t.Errorf("an unknown kind is %q", got)
	}
	for e, want := range map[*FetchError]string{
		{Kind: TooLarge, Message: "body over 1 MiB"}: "too large: body over 1 MiB",
		{Kind: Invalid, Message: "no URL"}:           "invalid request: no URL",
		{Kind: 9, Message: "?"}:                      "fetch error kind 9: ?",
	} {
		if got := e.Error(); got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	}
}

// TestJSON: the JSON of Request, Observation and Action is what host/gatekeeper/extism reads.
func TestJSON(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Request{Method: "GET", URL: "https://x/y"}, `{"method":"GET","url":"https://x/y"}`},
		{Request{Method: "POST", URL: "u", Headers: []Header{{"A", "b"}}, Body: []byte("hi")}, `{"method":"POST","url":"u","headers":[{"name":"A","value":"b"}],"body":"aGk="}`},
		{Observation{Title: "t", Description: "d"}, `{"title":"t","description":"d"}`},
		{Action{Title: "t", Kind: ActionKind{Tag: "a", Label: "b"}, AutoApprovable: true, Payload: "p"},
			`{"title":"t","description":"","kind":{"tag":"a","label":"b"},"autoApprovable":true,"implementsRevert":false,"payload":"p"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v = %s, %v; want %s", c.v, b, err, c.want)
		}
	}
}
