// Command jsonapi is a small notes service with a JSON API, the outside service the gatekeeper
// tests talk to (as a separate process, over loopback). Users authenticate with bearer
// tokens; each notebook belongs to one user.
//
//	jsonapi -token alice=SECRET -notebook work=alice [-listen 127.0.0.1:0]
//
// It prints "listening http://HOST:PORT" once ready, then one JSON line per request
// ({"method","path","user","status"}; user is the token's owner, "" without a token and "?"
// for an unknown token; tokens are never printed). Routes, under /api/notebooks/NAME:
//
//	GET    /notes        {"notes": [{"id","title","body"}]}
//	GET    /notes/ID     one note
//	POST   /notes        {"title","body"} -> 201 and the note
//	DELETE /notes/ID     204
//	GET    /whoami       {"user"}
//	GET    /redirect     302 to /notes
//	GET    /big?bytes=N  N bytes of "x"
//	GET    /echo         reflects the Authorization header, raw and encoded (see echo)
//	GET    /webhooks     {"webhooks": [{"id","url"}]}
//	POST   /webhooks     {"url","secret"} (secret in base64) -> 201 {"id","url"}
//	DELETE /webhooks/ID  204
//
// When a note is added, the service POSTs {"event":"note-added","notebook","note"} to each of
// the notebook's webhooks, signed as the notes gatekeeper's manifest declares: header
// X-Notes-Timestamp holds the Unix time and X-Notes-Signature "sha256=" and the hex
// HMAC-SHA256, keyed with the webhook's secret, of the timestamp, "." and the body. Each
// delivery is logged as {"method":"DELIVER","path":URL,"status"} (status 0: not delivered).
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type note struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// webhook is one registered webhook of a notebook.
type webhook struct {
	ID     int64  `json:"id"`
	URL    string `json:"url"`
	secret []byte
}

type server struct {
	tokens map[string]string // token -> user
	owners map[string]string // notebook -> user

	mu       sync.Mutex
	notes    map[string][]note
	next     int64
	webhooks map[string][]webhook
	nextHook int64
	out      *json.Encoder
}

type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }
func (p pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	p[k] = v
	return nil
}

func main() {
	tokens, notebooks := pairs{}, pairs{}
	flag.Var(tokens, "token", "USER=TOKEN: a user and their API token (repeatable)")
	flag.Var(notebooks, "notebook", "NAME=USER: a notebook and its owner (repeatable)")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	s := &server{tokens: map[string]string{}, owners: notebooks, notes: map[string][]note{}, webhooks: map[string][]webhook{}, out: json.NewEncoder(os.Stdout)}
	for user, token := range tokens {
		s.tokens[token] = user
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonapi:", err)
		os.Exit(1)
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	fmt.Fprintln(os.Stderr, "jsonapi:", http.Serve(ln, s))
	os.Exit(1)
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user := ""
	if auth := r.Header.Get("Authorization"); auth != "" {
		user = "?"
		if tok, ok := strings.CutPrefix(auth, "Bearer "); ok && s.tokens[tok] != "" {
			user = s.tokens[tok]
		}
	}
	sw := &statusWriter{ResponseWriter: w, status: 200}
	s.route(sw, r, user)
	s.mu.Lock()
	s.out.Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "user": user, "status": sw.status})
	s.mu.Unlock()
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *server) route(w http.ResponseWriter, r *http.Request, user string) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/notebooks/")
	if !ok {
		reply(w, 404, map[string]string{"error": "not found"})
		return
	}
	nb, sub, _ := strings.Cut(rest, "/")
	owner, ok := s.owners[nb]
	switch {
	case !ok:
		reply(w, 404, map[string]string{"error": "no notebook " + nb})
		return
	case user == "" || user == "?":
		reply(w, 401, map[string]string{"error": "a valid bearer token is required"})
		return
	case user != owner:
		reply(w, 403, map[string]string{"error": "notebook " + nb + " belongs to someone else"})
		return
	}
	switch {
	case sub == "whoami" && r.Method == "GET":
		reply(w, 200, map[string]string{"user": user})
	case sub == "redirect" && r.Method == "GET":
		http.Redirect(w, r, "/api/notebooks/"+nb+"/notes", http.StatusFound)
	case sub == "big" && r.Method == "GET":
		n, _ := strconv.Atoi(r.URL.Query().Get("bytes"))
		w.WriteHeader(200)
		w.Write([]byte(strings.Repeat("x", n)))
	case sub == "echo" && r.Method == "GET":
		echo(w, r)
	case sub == "notes" && r.Method == "GET":
		s.mu.Lock()
		list := append([]note{}, s.notes[nb]...)
		s.mu.Unlock()
		reply(w, 200, map[string]any{"notes": list})
	case sub == "notes" && r.Method == "POST":
		var n note
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Title == "" {
			reply(w, 400, map[string]string{"error": "want {\"title\", \"body\"}"})
			return
		}
		s.mu.Lock()
		s.next++
		n.ID = s.next
		s.notes[nb] = append(s.notes[nb], n)
		hooks := append([]webhook(nil), s.webhooks[nb]...)
		s.mu.Unlock()
		reply(w, 201, n)
		for _, h := range hooks {
			go s.deliver(h, nb, n)
		}
	case sub == "webhooks" && r.Method == "GET":
		s.mu.Lock()
		list := append([]webhook{}, s.webhooks[nb]...)
		s.mu.Unlock()
		reply(w, 200, map[string]any{"webhooks": list})
	case sub == "webhooks" && r.Method == "POST":
		var req struct{ URL, Secret string }
		err := json.NewDecoder(r.Body).Decode(&req)
		u, uerr := url.Parse(req.URL)
		secret, serr := base64.StdEncoding.DecodeString(req.Secret)
		if err != nil || uerr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || serr != nil || len(secret) == 0 {
			reply(w, 400, map[string]string{"error": "want {\"url\": an http(s) URL, \"secret\": base64}"})
			return
		}
		s.mu.Lock()
		s.nextHook++
		h := webhook{ID: s.nextHook, URL: req.URL, secret: secret}
		s.webhooks[nb] = append(s.webhooks[nb], h)
		s.mu.Unlock()
		reply(w, 201, h)
	case strings.HasPrefix(sub, "webhooks/") && r.Method == "DELETE":
		id, _ := strconv.ParseInt(strings.TrimPrefix(sub, "webhooks/"), 10, 64)
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, h := range s.webhooks[nb] {
			if h.ID == id {
				s.webhooks[nb] = append(s.webhooks[nb][:i], s.webhooks[nb][i+1:]...)
				w.WriteHeader(204)
				return
			}
		}
		reply(w, 404, map[string]string{"error": "no webhook " + strings.TrimPrefix(sub, "webhooks/")})
	case strings.HasPrefix(sub, "notes/"):
		id, err := strconv.ParseInt(strings.TrimPrefix(sub, "notes/"), 10, 64)
		if err != nil {
			reply(w, 400, map[string]string{"error": "bad note id"})
			return
		}
		s.note(w, r, nb, id)
	default:
		reply(w, 404, map[string]string{"error": "not found"})
	}
}

// echo reflects the Authorization header as careless services do: in a response header, and in
// a body, sent in 5-byte chunks, with one line per form (the header and its token, each raw,
// base64 in both alphabets with and without padding, URL-encoded as query and as path, and
// JSON-escaped), then the line "plain: hello, world".
func echo(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	w.Header().Set("X-Echo-Authorization", auth)
	w.Header().Set("Content-Type", "text/plain")
	var b strings.Builder
	for _, v := range []string{auth, strings.TrimPrefix(auth, "Bearer ")} {
		j, _ := json.Marshal(v)
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
			url.QueryEscape(v), url.PathEscape(v), string(j)} {
			b.WriteString("form: " + form + "\n")
		}
	}
	b.WriteString("plain: hello, world\n")
	flusher, _ := w.(http.Flusher)
	for body := b.String(); body != ""; {
		n := min(5, len(body))
		w.Write([]byte(body[:n]))
		body = body[n:]
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func (s *server) note(w http.ResponseWriter, r *http.Request, nb string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range s.notes[nb] {
		if n.ID != id {
			continue
		}
		switch r.Method {
		case "GET":
			reply(w, 200, n)
		case "DELETE":
			s.notes[nb] = append(s.notes[nb][:i], s.notes[nb][i+1:]...)
			w.WriteHeader(204)
		default:
			reply(w, 405, map[string]string{"error": "method not allowed"})
		}
		return
	}
	reply(w, 404, map[string]string{"error": "no note " + strconv.FormatInt(id, 10)})
}

// deliver POSTs the note-added event of note n of notebook nb to webhook h, signed with its
// secret, and logs the outcome.
func (s *server) deliver(h webhook, nb string, n note) {
	body, _ := json.Marshal(map[string]any{"event": "note-added", "notebook": nb, "note": n})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, h.secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	status := 0
	req, err := http.NewRequest("POST", h.URL, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Notes-Timestamp", ts)
		req.Header.Set("X-Notes-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		client := http.Client{Timeout: 30 * time.Second}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			status = resp.StatusCode
		}
	}
	s.mu.Lock()
	s.out.Encode(map[string]any{"method": "DELIVER", "path": h.URL, "user": "", "status": status})
	s.mu.Unlock()
}
