package kernel

import (
	"context"
	"errors"
	"time"
)

// The kernel keeps chats, their drafts and dry runs (store them, fence them by role); the
// agent that answers in a chat lives in host/agent and reaches the workspace only through a
// ChatRun, which acts as the chatting user (never more), re-checks that user's role on every
// call and audits every tool call with the chat named.

// AgentRunner runs a chat's agent (host/agent implements it; Config.Agent wires it). The
// kernel calls Run in a goroutine of its own for each run (after a user's message, or on
// retryAgent or when a connection request is answered); ctx is cancelled by stopAgent, by the
// chat's deletion, when the user loses access to the workspace, when the kernel closes, and
// (cluster mode) when the node loses the workspace's lease.
type AgentRunner interface {
	Run(ctx context.Context, run ChatRun) error
}

// ErrTurnLimit is what an AgentRunner's Run returns (wrapped, or by an error whose Is matches
// it) when the run reached the agent's limit of model turns: the kernel stores the error's
// text as the chat's notice and ends the run with "done" "turns", not as a failure.
var ErrTurnLimit = errors.New("the agent reached its limit of turns")

// ChatRun is one run of a chat's agent. Every method checks the chatting user's role in the
// workspace again (an error ends the run) and every tool method writes an audit line whose
// actor names the user and the chat ("ada/chat:ch_1").
type ChatRun interface {
	// Chat describes the chat.
	Chat() ChatInfo
	// Model is the chat's model, with its API key opened from the vault (never stored
	// outside the vault, never logged).
	Model() ModelSpec
	// History returns the chat's messages, oldest first, from the newest summary on (a
	// summary stands for every message before it).
	History(ctx context.Context) ([]ChatMessage, error)
	// Append stores m as the chat's next message (its ID and Time are set) and publishes it
	// to subscribers as a "message" event.
	Append(ctx context.Context, m ChatMessage) (ChatMessage, error)
	// Emit publishes a transient event (a text delta, a tool call starting) to subscribers.
	Emit(e ChatEvent)
	// Context describes the workspace for the system prompt.
	Context(ctx context.Context) (WorkspaceContext, error)

	// The agent's tools.

	// ListBindings and DescribeBinding are Workspace.ListBindings and DescribeBinding.
	ListBindings(ctx context.Context) ([]BindingInfo, error)
	DescribeBinding(ctx context.Context, name string) (string, error)
	// ExecuteCode is Workspace.ExecuteCode (opts.DryRun holds the writes for a person).
	ExecuteCode(ctx context.Context, code string, opts CodeOptions) (CodeResult, error)
	// ReadFile returns a gadget source file (a JS/TS file or "client.js") as the chat's draft
	// has it, else as the gadget's current version has it.
	ReadFile(ctx context.Context, gadget, file string) (string, error)
	// WriteFile puts a whole file into the chat's draft (never into a running gadget).
	WriteFile(ctx context.Context, gadget, file, content string) (DraftFile, error)
	// EditFile replaces the one occurrence of old by new in a file of the draft (the file is
	// taken from the gadget first); none or several occurrences are an error that says so.
	EditFile(ctx context.Context, gadget, file, old, new string) (DraftFile, error)
	// CreateGadget adds a new gadget to the draft: a JS gadget of files, or one made from a
	// blueprint of the user's (files nil).
	CreateGadget(ctx context.Context, name string, files map[string]string, blueprint string) error
	// ListBlueprints is Workspace.ListBlueprints.
	ListBlueprints(ctx context.Context) ([]BlueprintInfo, error)
	// RequestConnection asks the user to bind one of their accounts of a gatekeeper under
	// binding (for gadget, or for the chat's Code Mode when gadget is ""); it publishes an
	// "approval_needed" event. The run should end its turn; accepting resumes the chat.
	RequestConnection(ctx context.Context, req ConnectionRequest) error
	// Audit writes an audit line for a tool call that has no method here.
	Audit(ctx context.Context, tool, detail string) error
}

// ModelSpec is a model as the agent needs it.
type ModelSpec struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Provider string `json:"provider"` // provider.KindOpenAI or provider.KindAnthropic
	BaseURL  string `json:"baseUrl"`
	Model    string `json:"model"` // the provider's name of the model
	// ContextWindow is the model's context in tokens (0: 32768).
	ContextWindow int `json:"contextWindow"`
	// APIKey is the opened key ("" for none); it never leaves the process.
	APIKey string `json:"-"`
}

// ChatInfo describes a chat.
type ChatInfo struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Title     string    `json:"title"`
	ModelID   string    `json:"modelId,omitempty"` // "": a chat between people
	Creator   string    `json:"creator"`           // the username who started it
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	// Running says an agent run is under way; Waiting names what it waits for ("draft",
	// "dry_run", "connection", "" for nothing).
	Running bool   `json:"running"`
	Waiting string `json:"waiting,omitempty"`
	// Connections are the agent's connection requests waiting for the caller (getChat only).
	Connections []ConnectionRequest `json:"connections,omitempty"`
}

// Roles of a ChatMessage.
const (
	ChatUser      = "user"      // a person's message
	ChatAssistant = "assistant" // the agent's text and tool calls
	ChatTool      = "tool"      // a tool call's output
	ChatSummary   = "summary"   // a summary of every message before it
	ChatNotice    = "notice"    // the host's note: an error, a stop, a decision
)

// ChatMessage is one durable message of a chat.
type ChatMessage struct {
	ID     uint64    `json:"id"` // increasing within the chat
	Time   time.Time `json:"time"`
	Role   string    `json:"role"`
	Author string    `json:"author"` // the username, or "agent"
	Text   string    `json:"text"`
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ChatToolCall `json:"toolCalls,omitempty"`
	// ToolCallID, ToolName and IsError belong to a tool message.
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
}

// ChatToolCall is one tool call of an assistant message; Args is its JSON arguments.
type ChatToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// Types of a ChatEvent.
const (
	EventMessage      = "message"         // Message was stored
	EventDelta        = "delta"           // Text is the next piece of the agent's reply
	EventToolStarted  = "tool_started"    // Tool started (Tool.Output empty)
	EventToolFinished = "tool_finished"   // Tool finished, with its output
	EventProposed     = "proposed_change" // the draft changed (Draft) or a dry run waits (DryRun)
	EventApproval     = "approval_needed" // Connection, or a gatekeeper action in the queue
	EventError        = "error"           // Text says what went wrong; the run ended
	EventDone         = "done"            // the run ended (Text: why: "end", "stopped", "waiting", "turns")
	EventStatus       = "status"          // Chat changed (title, running, waiting)
)

// ChatEvent is what subscribeChat's callback receives.
type ChatEvent struct {
	Type       string             `json:"type"`
	Chat       string             `json:"chat"`
	Message    *ChatMessage       `json:"message,omitempty"`
	Text       string             `json:"text,omitempty"`
	Tool       *ChatToolEvent     `json:"tool,omitempty"`
	Draft      *DraftInfo         `json:"draft,omitempty"`
	DryRun     *DryRunInfo        `json:"dryRun,omitempty"`
	Connection *ConnectionRequest `json:"connection,omitempty"`
	Info       *ChatInfo          `json:"info,omitempty"`
}

// ChatToolEvent is a tool call starting or finishing.
type ChatToolEvent struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Args    string `json:"args,omitempty"`
	Output  string `json:"output,omitempty"`
	IsError bool   `json:"isError,omitempty"`
}

// ConnectionRequest asks the user to bind one of their accounts of Gatekeeper.
type ConnectionRequest struct {
	ID         string `json:"id"`
	Gatekeeper string `json:"gatekeeper"` // the gatekeeper's id or name
	Binding    string `json:"binding"`
	Gadget     string `json:"gadget,omitempty"` // "": the chat's Code Mode env
	Reason     string `json:"reason"`
}

// DraftFile is one file of a draft as it now stands.
type DraftFile struct {
	Gadget string `json:"gadget"`
	File   string `json:"file"`
	// Status is "added", "modified" or "deleted" against the base version.
	Status string `json:"status"`
	// Diff is a unified diff from the base version's file to the draft's.
	Diff string `json:"diff"`
}

// DraftInfo is a chat's draft: what accepting it would deploy.
type DraftInfo struct {
	Chat  string      `json:"chat"`
	Files []DraftFile `json:"files"`
	// NewGadgets are the gadgets accepting creates (by name; Blueprint when made from one).
	NewGadgets []DraftGadget `json:"newGadgets"`
	// Stale names the gadgets whose current version moved since the draft was based on them:
	// the draft must be rebased before acceptDraft; the agent's next readFile, writeFile or
	// editFile of such a gadget does it (draftedit.go).
	Stale []string `json:"stale"`
}

// DraftGadget is a gadget a draft creates.
type DraftGadget struct {
	Name      string `json:"name"`
	Blueprint string `json:"blueprint,omitempty"`
}

// WorkspaceContext is what the agent's system prompt says of the workspace.
type WorkspaceContext struct {
	Workspace    WorkspaceInfo   `json:"workspace"`
	Role         string          `json:"role"` // the chatting user's role
	Bindings     []BindingInfo   `json:"bindings"`
	Declarations string          `json:"declarations"` // TypeScript of every binding
	Gadgets      []GadgetInfo    `json:"gadgets"`
	Accounts     []AccountInfo   `json:"accounts"`
	Blueprints   []BlueprintInfo `json:"blueprints"`
	// Instructions are the admin's instructions for every agent of the server.
	Instructions string `json:"instructions"`
}

// DryRunInfo is what a dry run of executeCode would change, held until commitDryRun(ID) or
// discardDryRun(ID), or until Expires.
type DryRunInfo struct {
	ID      string         `json:"id"`
	Expires time.Time      `json:"expires"`
	Gadgets []DryRunGadget `json:"gadgets"`
	Actions []DryRunAction `json:"actions"`
}

// DryRunGadget is what a dry run wrote to one gadget's state.
type DryRunGadget struct {
	Gadget  string     `json:"gadget"`
	Added   []KVChange `json:"added"`
	Changed []KVChange `json:"changed"`
	Removed []KVChange `json:"removed"`
}

// KVChange is one key a dry run wrote: its old and new value (nil: absent). Keys and values
// are shown as text when they are UTF-8 without control characters (tab and line breaks
// allowed), else all three in base64 with Binary set.
type KVChange struct {
	Key    string  `json:"key"`
	Old    *string `json:"old"`
	New    *string `json:"new"`
	Binary bool    `json:"binary,omitempty"`
}

// DryRunAction is a gatekeeper action a dry run would have queued: the binding call that
// submitted it (Method, Args) and the action as the approval queue will show it (Title,
// Description, Kind).
type DryRunAction struct {
	Binding     string `json:"binding"`
	Gatekeeper  string `json:"gatekeeper"`
	Account     string `json:"account"`
	Method      string `json:"method"`
	Args        string `json:"args"` // JSON
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Kind        string `json:"kind,omitempty"`
}
