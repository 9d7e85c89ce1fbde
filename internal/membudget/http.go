package membudget

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// ReadBody reads r's body (at most maxBody bytes) within timeout of now, its bytes reserved in
// s as they arrive; the caller releases held when it is done with the body. When the body
// cannot be had it answers r itself (Refuse, 408, 413 or 400) and returns ok false; what names
// the requests in the answer ("batch requests", "MCP requests").
func ReadBody(w http.ResponseWriter, r *http.Request, maxBody int, timeout time.Duration, s *Share, what string) (body []byte, held int64, ok bool) {
	// The body must arrive in time, so that a slowly sent one cannot hold its reservation
	// (and the connection) for ever.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	body, held, err := ReadAll(http.MaxBytesReader(w, r.Body, int64(maxBody)), maxBody, s)
	var refused *RefusedError
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return body, held, true
	case errors.As(err, &refused):
		Refuse(w, refused.Refusal, what)
	case errors.Is(err, os.ErrDeadlineExceeded):
		http.Error(w, "the request's body did not arrive in time", http.StatusRequestTimeout)
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the request's body exceeds %d bytes", maxBody), http.StatusRequestEntityTooLarge)
	default:
		http.Error(w, "reading the request's body: "+err.Error(), http.StatusBadRequest)
	}
	return nil, held, false
}

// Refuse answers a request that did not fit in a budget (503) or in its client's share (429),
// with Retry-After, and closes the connection (net/http would otherwise read the rest of an
// unread body before it answers). what names the requests ("batch requests").
func Refuse(w http.ResponseWriter, refused Refusal, what string) {
	status, msg := http.StatusServiceUnavailable, fmt.Sprintf("the server holds as many %s as it takes at once: send this one again shortly", what)
	if refused == Address {
		status, msg = http.StatusTooManyRequests, fmt.Sprintf("the server holds as many %s from your address as it takes from one address at once: send this one again when your others have been answered", what)
	}
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Connection", "close")
	http.Error(w, msg, status)
}
