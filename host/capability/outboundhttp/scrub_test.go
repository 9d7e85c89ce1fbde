package outboundhttp

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestScrubbedResponses: the credentials of a Basic header (the header value, the token, the
// user:password inside and the password) are removed from a reflecting response's headers and
// its body, streamed in odd chunks; a value under 8 bytes is left; Scrubbed hears of each
// response it removed something from, with the URL without its query, and its error fails the
// request; a body that grows by the markers is not counted as over the limit.
func TestScrubbedResponses(t *testing.T) {
	const pair = "ada:pa55-w0rd/long"
	token := base64.StdEncoding.EncodeToString([]byte(pair))
	reflect := func(auth, key string) string {
		return "auth=" + auth + "\npair=" + pair + "\npassword=pa55-w0rd/long\nkey=" + key + "\n" + strings.Repeat("filler ", 3000) + "\ntail=" + token
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		body := reflect(r.Header.Get("Authorization"), r.Header.Get("X-Key"))
		for i := 0; i < len(body); i += 777 {
			w.Write([]byte(body[i:min(i+777, len(body))]))
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, err := NewClient(Options{AllowAddrs: []string{addr}, MaxResponseBody: len(reflect("Basic "+token, "short1"))})
	if err != nil {
		t.Fatal(err)
	}
	type report struct {
		method, url string
		n           int
	}
	var reports []report
	var refuse error
	p := &Policy{
		Schemes: []string{"http"}, Hosts: []string{addr}, Prefixes: []string{srv.URL + "/api"},
		Headers: []Header{{Name: "Authorization", Value: "Basic " + token}, {Name: "X-Key", Value: "short1"}},
		Secrets: []string{token, "short1"},
		Scrubbed: func(_ context.Context, method, url string, n int) error {
			reports = append(reports, report{method, url, n})
			return refuse
		},
	}
	resp, err := c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/api/echo?q=1"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(strings.ReplaceAll(reflect(CredentialMarker, "short1"), pair, CredentialMarker), "pa55-w0rd/long", CredentialMarker)
	want = strings.ReplaceAll(want, token, CredentialMarker)
	if string(resp.Body) != want || len(want) <= len(reflect("Basic "+token, "short1")) {
		t.Errorf("body:\n%.300q\nwant:\n%.300q", resp.Body, want)
	}
	for _, h := range resp.Headers {
		if h.Name == "X-Echo" && h.Value != CredentialMarker {
			t.Errorf("X-Echo: %q, want the marker", h.Value)
		}
	}
	if len(reports) != 1 || reports[0] != (report{"GET", srv.URL + "/api/echo", 5}) {
		t.Errorf("Scrubbed heard %+v, want one report of 5 removals from GET %s/api/echo", reports, srv.URL)
	}
	refuse = errors.New("the queue is closed")
	_, err = c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/api/echo"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != Failed || !strings.Contains(e.Message, "the queue is closed") || strings.Contains(e.Message, token) {
		t.Fatalf("a refused report: %v, want a failed error", err)
	}
}

// TestScrubbedResponsesAreNotCompressed: with credentials to scrub, the host asks for no
// content coding, whatever the guest asked for, and refuses a response encoded anyway, which it
// could not search.
func TestScrubbedResponsesAreNotCompressed(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		if r.URL.Path == "/api/gzip" {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, err := NewClient(Options{AllowAddrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{Schemes: []string{"http"}, Hosts: []string{addr}, Prefixes: []string{srv.URL + "/api"},
		Headers: []Header{{Name: "Authorization", Value: "Bearer a-long-token"}}, Secrets: []string{"a-long-token"}}
	gzip := []Header{{Name: "Accept-Encoding", Value: "gzip"}}
	resp, err := c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/api/plain", Headers: gzip})
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("plain: %+v %v", resp, err)
	}
	_, err = c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/api/gzip", Headers: gzip})
	var e *Error
	if !errors.As(err, &e) || e.Kind != Failed || !strings.Contains(e.Message, "Content-Encoding gzip") {
		t.Fatalf("an encoded response: %v, want a failed error naming the coding", err)
	}
	if len(asked) != 2 || asked[0] != "identity" || asked[1] != "identity" {
		t.Fatalf("the service was asked for %q, want identity both times", asked)
	}
	// Without credentials to scrub, the guest's Accept-Encoding and the encoded body pass.
	p.Headers, p.Secrets = nil, nil
	if _, err := c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/api/gzip", Headers: gzip}); err != nil || asked[2] != "gzip" {
		t.Fatalf("without credentials: %v, asked for %q", err, asked[2])
	}
}
