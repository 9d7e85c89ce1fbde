package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"atelier/tests/capnweb"
)

// report is the part of the JSON line printed by bench.mjs with --histogram that is merged.
type report struct {
	Calls      int        `json:"calls"`
	CPUSecs    float64    `json:"cpu_s"`
	LateMillis float64    `json:"late_ms"`
	Latency    [][2]int64 `json:"latency_us"` // [microseconds, calls], increasing
}

// measurement is one scenario against one server, all client processes and runs merged.
type measurement struct {
	Calls     int     `json:"calls"`
	CallsPerS float64 `json:"calls_per_s"`
	P50Millis float64 `json:"p50_ms"`
	P99Millis float64 `json:"p99_ms"`
	// ServerCPUPerCall is the server's CPU time per call in microseconds over the window.
	ServerCPUPerCall float64 `json:"server_cpu_us_per_call"`
	// ServerSysPerCall is the part of ServerCPUPerCall spent in the kernel (system time: the
	// socket's system calls, waiting and waking, the loopback's delivery to the client).
	ServerSysPerCall float64 `json:"server_sys_us_per_call"`
	// ServerCPU and ClientCPU are the share of one core the server and all client processes
	// used over the windows (1 = one core); MaxClientCPU is the busiest client process's share
	// (averaged over the runs).
	ServerCPU    float64 `json:"server_cpu"`
	ClientCPU    float64 `json:"client_cpu"`
	MaxClientCPU float64 `json:"max_client_cpu"`
	// OtherCPU is the share of a core that other processes on the machine used.
	OtherCPU float64 `json:"other_cpu"`
	// Limit names what bounded the run (see printTable).
	Limit string `json:"limit"`
}

// bench runs one scenario with a fixed number of client processes.
type bench struct {
	nodeDir          string
	sc               scenario
	clients          int
	duration, warmup time.Duration
}

// runResult is one run of a scenario against one server.
type runResult struct {
	reports   []report      // one per client process
	serverCPU time.Duration // server CPU time over the window
	serverSys time.Duration // the part of serverCPU spent in the kernel
	busy      time.Duration // CPU time of the whole machine over the window
}

// measure runs the clients against srv, all measuring the same window: once every client has
// connected its sessions, the window starts --warmup later.
func (b bench) measure(srv *capnweb.Server) (runResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.warmup+b.duration+2*time.Minute)
	defer cancel()

	clients := make([]*client, 0, b.clients)
	defer func() {
		for _, c := range clients {
			c.stop()
		}
	}()
	for i := range b.clients {
		// Spread the sessions: the first clients take one more when they do not divide evenly.
		sessions := b.sc.Sessions / b.clients
		if i < b.sc.Sessions%b.clients {
			sessions++
		}
		c, err := startClient(ctx, b.nodeDir, "bench.mjs", "--url", srv.URL,
			"--mode", b.sc.Mode, "--sessions", strconv.Itoa(sessions), "--depth", strconv.Itoa(b.sc.Depth),
			"--duration", strconv.FormatFloat(b.duration.Seconds(), 'f', -1, 64), "--sync", "--histogram")
		if err != nil {
			return runResult{}, err
		}
		clients = append(clients, c)
	}
	for _, c := range clients {
		if err := c.ready(); err != nil {
			return runResult{}, err
		}
	}
	start := time.Now().Add(b.warmup)
	end := start.Add(b.duration)
	for _, c := range clients {
		if err := c.begin(start); err != nil {
			return runResult{}, err
		}
	}
	time.Sleep(time.Until(start))
	userStart, sysStart, errStart := srv.CPUTimes()
	busyStart, errBusyStart := machineBusy()
	time.Sleep(time.Until(end))
	userEnd, sysEnd, errEnd := srv.CPUTimes()
	busyEnd, errBusyEnd := machineBusy()
	res := runResult{reports: make([]report, len(clients))}
	errs := []error{errStart, errEnd, errBusyStart, errBusyEnd}
	for i, c := range clients {
		var err error
		res.reports[i], err = c.report()
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	for _, r := range res.reports {
		// A client too busy to read its start time in time measures a shifted window.
		if late := time.Duration(r.LateMillis * float64(time.Millisecond)); late > b.duration/10 {
			return res, fmt.Errorf("a client started its window %v late; raise --warmup", late)
		}
	}
	res.serverSys = sysEnd - sysStart
	res.serverCPU, res.busy = userEnd-userStart+res.serverSys, busyEnd-busyStart
	return res, nil
}

// client is a running bench.mjs process started with --sync.
type client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr bytes.Buffer
	waited bool
}

func startClient(ctx context.Context, nodeDir string, args ...string) (*client, error) {
	c := &client{cmd: exec.CommandContext(ctx, "node", args...)}
	c.cmd.Dir = nodeDir
	c.cmd.WaitDelay = 5 * time.Second
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("bench.mjs stdin: %w", err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench.mjs stdout: %w", err)
	}
	c.stdout = bufio.NewReader(stdout)
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bench.mjs: %w", err)
	}
	return c, nil
}

// line reads the next JSON line into v; a line with an error field fails.
func (c *client) line(v any) error {
	text, err := c.stdout.ReadBytes('\n')
	if err != nil {
		_ = c.wait()
		return fmt.Errorf("bench.mjs ended early (%w): %s", err, c.stderr.String())
	}
	var failure struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(text, &failure) == nil && failure.Error != "" {
		return fmt.Errorf("bench.mjs: %s", failure.Error)
	}
	if err := json.Unmarshal(text, v); err != nil {
		return fmt.Errorf("bench.mjs output %q: %w", text, err)
	}
	return nil
}

// ready waits until the client has connected its sessions.
func (c *client) ready() error {
	var r struct {
		Ready bool `json:"ready"`
	}
	if err := c.line(&r); err != nil {
		return err
	}
	if !r.Ready {
		return errors.New("bench.mjs: expected its ready line")
	}
	return nil
}

// begin tells the client when the measured window starts.
func (c *client) begin(start time.Time) error {
	_, err := fmt.Fprintf(c.stdin, "%d\n", start.UnixMilli())
	if closeErr := c.stdin.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("bench.mjs stdin: %w", err)
	}
	return nil
}

// report reads the client's report and waits for it to exit.
func (c *client) report() (report, error) {
	var r report
	if err := c.line(&r); err != nil {
		return r, err
	}
	if err := c.wait(); err != nil {
		return r, fmt.Errorf("bench.mjs: %w\nstderr:\n%s", err, c.stderr.String())
	}
	return r, nil
}

// stop kills the process unless it has been waited for, and waits for it.
func (c *client) stop() {
	if !c.waited {
		_ = c.cmd.Process.Kill()
		_ = c.wait()
	}
}

// wait waits for the process to exit, once.
func (c *client) wait() error {
	if c.waited {
		return nil
	}
	c.waited = true
	return c.cmd.Wait()
}

// merge adds up the runs of one scenario against one server: their calls, CPU times and
// latency histograms. maxCPU is how many cores the server can keep busy.
func (b bench) merge(runs []runResult, maxCPU float64) measurement {
	var m measurement
	counts := map[int64]int64{}
	var serverCPU, serverSys, busy time.Duration
	window := b.duration.Seconds() * float64(len(runs))
	for _, run := range runs {
		serverCPU += run.serverCPU
		serverSys += run.serverSys
		busy += run.busy
		var maxClient float64
		for _, r := range run.reports {
			m.Calls += r.Calls
			for _, bucket := range r.Latency {
				counts[bucket[0]] += bucket[1]
			}
			m.ClientCPU += r.CPUSecs / window
			maxClient = max(maxClient, r.CPUSecs/b.duration.Seconds())
		}
		m.MaxClientCPU += maxClient / float64(len(runs))
	}
	m.CallsPerS = float64(m.Calls) / window
	m.P50Millis = percentile(counts, 50)
	m.P99Millis = percentile(counts, 99)
	m.ServerCPU = serverCPU.Seconds() / window
	machine := busy.Seconds() / window
	m.OtherCPU = max(0, machine-m.ServerCPU-m.ClientCPU)
	if m.Calls > 0 {
		m.ServerCPUPerCall = float64(serverCPU.Microseconds()) / float64(m.Calls)
		m.ServerSysPerCall = float64(serverSys.Microseconds()) / float64(m.Calls)
	}
	switch {
	case m.MaxClientCPU >= 0.9:
		m.Limit = "client"
	case m.ServerCPU >= 0.9*maxCPU:
		m.Limit = "server"
	case machine >= 0.9*float64(runtime.NumCPU()):
		m.Limit = "cpu"
	default:
		m.Limit = "latency"
	}
	return m
}

// percentile returns the latency in milliseconds below which p percent of the calls finished,
// with the same rank rule as bench.mjs.
func percentile(counts map[int64]int64, p float64) float64 {
	var total int64
	keys := make([]int64, 0, len(counts))
	for us, n := range counts {
		keys = append(keys, us)
		total += n
	}
	if total == 0 {
		return 0
	}
	slices.Sort(keys)
	rank := min(total-1, int64(p/100*float64(total)))
	var seen int64
	for _, us := range keys {
		seen += counts[us]
		if seen > rank {
			return float64(us) / 1000
		}
	}
	return float64(keys[len(keys)-1]) / 1000
}

// machineBusy returns the CPU time all cores of the machine have spent not idle (Linux
// /proc/stat: every field of the "cpu" line but idle and iowait).
func machineBusy() (time.Duration, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("machine CPU time: %w", err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, fmt.Errorf("machine CPU time: malformed /proc/stat line %q", line)
	}
	var ticks int64
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("machine CPU time: %w", err)
		}
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest times are already in user
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / capnweb.UserHZ, nil
}
