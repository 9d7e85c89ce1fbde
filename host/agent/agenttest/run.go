package agenttest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"atelier/host/kernel"
)

// Run is an in-memory kernel.ChatRun of a workspace described by Workspace. Gadget files live in Files ("gadget/file" -> content),
// the draft's in Draft; Code runs executeCode snippets. Every tool method is recorded in
// Calls as "method arg, ...". Set the exported fields before the run starts.
type Run struct {
	Info      kernel.ChatInfo
	Spec      kernel.ModelSpec
	Workspace kernel.WorkspaceContext
	Files     map[string]string
	// Code answers ExecuteCode (nil: an error).
	Code func(code string, opts kernel.CodeOptions) (kernel.CodeResult, error)
	// OnEmit, when set, sees each event as it is emitted (outside Run's lock).
	OnEmit func(kernel.ChatEvent)

	mu       sync.Mutex
	messages []kernel.ChatMessage
	events   []kernel.ChatEvent
	calls    []string
	draft    map[string]string
}

var _ kernel.ChatRun = (*Run)(nil)

// Messages returns the stored messages.
func (r *Run) Messages() []kernel.ChatMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kernel.ChatMessage(nil), r.messages...)
}

// Events returns the emitted events (the "message" events of Append included).
func (r *Run) Events() []kernel.ChatEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kernel.ChatEvent(nil), r.events...)
}

// Calls returns the tool methods called, in order.
func (r *Run) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// Draft returns the draft's files ("gadget/file" -> content).
func (r *Run) Draft() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.draft)
}

// Seed stores messages as if earlier runs had.
func (r *Run) Seed(ms ...kernel.ChatMessage) {
	for _, m := range ms {
		r.store(m)
	}
}

func (r *Run) store(m kernel.ChatMessage) kernel.ChatMessage {
	r.mu.Lock()
	m.ID = uint64(len(r.messages) + 1)
	m.Time = time.Unix(int64(m.ID), 0)
	r.messages = append(r.messages, m)
	r.mu.Unlock()
	return m
}

func (r *Run) record(format string, args ...any) {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// Chat implements kernel.ChatRun.
func (r *Run) Chat() kernel.ChatInfo { return r.Info }

// Model implements kernel.ChatRun.
func (r *Run) Model() kernel.ModelSpec { return r.Spec }

// History implements kernel.ChatRun: the messages from the newest summary on.
func (r *Run) History(ctx context.Context) ([]kernel.ChatMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	from := 0
	for i, m := range r.messages {
		if m.Role == kernel.ChatSummary {
			from = i
		}
	}
	return append([]kernel.ChatMessage(nil), r.messages[from:]...), nil
}

// Append implements kernel.ChatRun.
func (r *Run) Append(ctx context.Context, m kernel.ChatMessage) (kernel.ChatMessage, error) {
	if err := ctx.Err(); err != nil {
		return kernel.ChatMessage{}, err
	}
	m = r.store(m)
	r.Emit(kernel.ChatEvent{Type: kernel.EventMessage, Chat: r.Info.ID, Message: &m})
	return m, nil
}

// Emit implements kernel.ChatRun.
func (r *Run) Emit(e kernel.ChatEvent) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if r.OnEmit != nil {
		r.OnEmit(e)
	}
}

// Context implements kernel.ChatRun.
func (r *Run) Context(ctx context.Context) (kernel.WorkspaceContext, error) {
	return r.Workspace, ctx.Err()
}

// ListBindings implements kernel.ChatRun.
func (r *Run) ListBindings(ctx context.Context) ([]kernel.BindingInfo, error) {
	r.record("listBindings")
	return r.Workspace.Bindings, ctx.Err()
}

// DescribeBinding implements kernel.ChatRun.
func (r *Run) DescribeBinding(ctx context.Context, name string) (string, error) {
	r.record("describeBinding %s", name)
	for _, b := range r.Workspace.Bindings {
		if b.Name == name {
			return "declare const " + name + ": { " + strings.Join(b.Methods, "(): Promise<unknown>; ") + "(): Promise<unknown> }", nil
		}
	}
	return "", fmt.Errorf("no binding %q", name)
}

// ExecuteCode implements kernel.ChatRun.
func (r *Run) ExecuteCode(ctx context.Context, code string, opts kernel.CodeOptions) (kernel.CodeResult, error) {
	r.record("executeCode dryRun=%t", opts.DryRun)
	if r.Code == nil {
		return kernel.CodeResult{}, fmt.Errorf("executeCode is not available here")
	}
	return r.Code(code, opts)
}

// ReadFile implements kernel.ChatRun.
func (r *Run) ReadFile(ctx context.Context, gadget, file string) (string, error) {
	r.record("readFile %s/%s", gadget, file)
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.draft[gadget+"/"+file]; ok {
		return s, nil
	}
	if s, ok := r.Files[gadget+"/"+file]; ok {
		return s, nil
	}
	return "", fmt.Errorf("gadget %q has no file %q", gadget, file)
}

// WriteFile implements kernel.ChatRun.
func (r *Run) WriteFile(ctx context.Context, gadget, file, content string) (kernel.DraftFile, error) {
	r.record("writeFile %s/%s", gadget, file)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draft == nil {
		r.draft = map[string]string{}
	}
	r.draft[gadget+"/"+file] = content
	return kernel.DraftFile{Gadget: gadget, File: file, Status: "modified", Diff: "+" + content}, nil
}

// EditFile implements kernel.ChatRun.
func (r *Run) EditFile(ctx context.Context, gadget, file, old, new string) (kernel.DraftFile, error) {
	r.record("editFile %s/%s", gadget, file)
	r.mu.Lock()
	defer r.mu.Unlock()
	key := gadget + "/" + file
	s, ok := r.draft[key]
	if !ok {
		if s, ok = r.Files[key]; !ok {
			return kernel.DraftFile{}, fmt.Errorf("gadget %q has no file %q", gadget, file)
		}
	}
	if n := strings.Count(s, old); n != 1 {
		return kernel.DraftFile{}, fmt.Errorf("%q occurs %d times in %s, not once", old, n, key)
	}
	if r.draft == nil {
		r.draft = map[string]string{}
	}
	r.draft[key] = strings.Replace(s, old, new, 1)
	return kernel.DraftFile{Gadget: gadget, File: file, Status: "modified", Diff: "-" + old + "\n+" + new}, nil
}

// CreateGadget implements kernel.ChatRun.
func (r *Run) CreateGadget(ctx context.Context, name string, files map[string]string, blueprint string) error {
	r.record("createGadget %s", name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draft == nil {
		r.draft = map[string]string{}
	}
	for f, s := range files {
		r.draft[name+"/"+f] = s
	}
	return nil
}

// ListBlueprints implements kernel.ChatRun.
func (r *Run) ListBlueprints(ctx context.Context) ([]kernel.BlueprintInfo, error) {
	r.record("listBlueprints")
	return r.Workspace.Blueprints, nil
}

// RequestConnection implements kernel.ChatRun.
func (r *Run) RequestConnection(ctx context.Context, req kernel.ConnectionRequest) error {
	r.record("requestConnection %s %s", req.Gatekeeper, req.Binding)
	r.Emit(kernel.ChatEvent{Type: kernel.EventApproval, Chat: r.Info.ID, Connection: &req})
	return nil
}

// Audit implements kernel.ChatRun.
func (r *Run) Audit(ctx context.Context, tool, detail string) error {
	r.record("audit %s", tool)
	return nil
}
