package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"atelier/host/agent/provider"
	"atelier/tests/modelserver"
)

// BenchmarkProviderDelta measures what the provider client adds between a model's token and
// the agent: per wire format, against the scripted model server on loopback, the delay from
// the server taking a token to write as its SSE event until the client's onEvent has it, one
// token at a time (the next is sent once the last arrived), reported as p50 and p99 in µs,
// with the process's CPU per token (server and client together). The parse sub-benchmarks
// time the client alone on a recorded stream of 2,000 tokens held in memory (no network):
// its CPU per token.
func BenchmarkProviderDelta(b *testing.B) {
	for _, w := range []modelserver.Wire{modelserver.OpenAI, modelserver.Anthropic} {
		b.Run("delay/"+string(w), func(b *testing.B) { benchDelay(b, w) })
		b.Run("parse/"+string(w), func(b *testing.B) { benchParse(b, w) })
	}
}

func benchDelay(b *testing.B, w modelserver.Wire) {
	pieces := make(chan string)
	s := modelserver.Start(b, w, modelserver.Stream(pieces))
	cfg := s.Config()
	cfg.MaxReply = 1 << 30
	c, err := provider.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	arrived := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}}, func(e provider.Event) error {
			if e.Kind == provider.EventText {
				arrived <- time.Now()
			}
			return nil
		})
		done <- err
	}()
	var delays []time.Duration
	cpu := cpuTime(b)
	b.ReportAllocs()
	for b.Loop() {
		sent := time.Now()
		pieces <- " token"
		delays = append(delays, (<-arrived).Sub(sent))
	}
	cpu = cpuTime(b) - cpu
	close(pieces)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(delays[len(delays)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(len(delays)), "cpu-µs/token")
}

// tokens is the length of the recorded stream of the parse benchmarks.
const tokens = 2000

func benchParse(b *testing.B, w modelserver.Wire) {
	s := modelserver.Start(b, w, modelserver.Text(strings.Repeat(" token", tokens)))
	cfg := s.Config()
	stream := record(b, cfg)
	cfg.HTTP = &http.Client{Transport: replay(stream)}
	c, err := provider.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	req := provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := c.Stream(context.Background(), req, func(provider.Event) error { n++; return nil }); err != nil || n != tokens {
			b.Fatalf("%d events, error %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*tokens), "µs/token")
}

// record returns the bytes of the stream the server sends for its one turn.
func record(b *testing.B, cfg provider.Config) []byte {
	var buf bytes.Buffer
	cfg.HTTP.Transport = tee{cfg.HTTP.Transport, &buf}
	c, err := provider.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}}, func(provider.Event) error { return nil }); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// tee is a transport that copies response bodies into w.
type tee struct {
	rt http.RoundTripper
	w  io.Writer
}

func (t tee) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, t.w), resp.Body}
	}
	return resp, err
}

// replay is a transport that answers every request with the stream.
type replay []byte

func (s replay) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(s)),
		Request:    r,
	}, nil
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(fmt.Errorf("getrusage: %w", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
