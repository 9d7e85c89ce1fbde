// Package store keeps Atelier's durable state: users, tokens, agents, workspaces with their
// gadgets, code versions, bindings, sharing, per-gadget key-value state and audit log, and
// blueprints. It knows the data model and bbolt, nothing of Wasm or RPC.
//
// Store is the interface the kernel uses; Bolt is the embedded implementation over one bbolt
// file. The workspace part follows the shapes of the scale-out design (notes/scale-out.md §5):
// a workspace is opened under a Lease whose Epoch fences writers, and everything a call changes
// is applied by one atomic WorkspaceStore.Commit that is refused with ErrFenced once another
// lease took the workspace over. A distributed backend implements the same interfaces.
//
// Every write is durable (fsync'd) before the method that made it returns, or, for
// CommitChain.Submit, before its Pending resolves. Code blobs are reference-counted by the
// gadget versions and blueprints using them and deleted with the last reference; every
// gadget's storage use (bytes of keys plus values) is kept up to date by each commit.
package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"atelier/host/quota"
)

// Limits of the data model.
const (
	// MaxValue is the largest value of a gadget's key-value state.
	MaxValue = 1 << 20
	// MaxKey is the longest key of a gadget's key-value state.
	MaxKey = 4096
)

var (
	// ErrNotFound: the record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a record with that name exists.
	ErrConflict = errors.New("already exists")
	// ErrFenced: the lease a WorkspaceStore was opened with is no longer the workspace's
	// current one; nothing was written and the holder must stop.
	ErrFenced = errors.New("workspace lease lost (fenced by a newer epoch)")
	// ErrTooLarge: a key or value exceeds MaxKey or MaxValue.
	ErrTooLarge = errors.New("too large")
	// ErrOwnedElsewhere: another node holds the workspace's lease (cluster mode); the error is
	// an *OwnerError that names it.
	ErrOwnedElsewhere = errors.New("workspace is run by another node")
	// ErrChainBroken: an earlier commit of the same CommitChain failed, so this one (which may
	// depend on it) was refused without writing anything. The error wraps the earlier failure.
	ErrChainBroken = errors.New("an earlier commit of this chain failed")
)

// WorkspaceID identifies a workspace; GadgetID a gadget (stable across renames).
type (
	WorkspaceID string
	GadgetID    string
	// Epoch is a fencing token: it strictly increases on every ownership change of a workspace.
	Epoch uint64
	// NodeID names the process that holds a workspace's lease.
	NodeID string
)

// OwnerError is returned by Placement.Acquire when another node holds the lease.
type OwnerError struct {
	Workspace WorkspaceID
	Node      NodeID
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("workspace %s is run by node %s", e.Workspace, e.Node)
}

// Is makes errors.Is(err, ErrOwnedElsewhere) hold.
func (e *OwnerError) Is(target error) bool { return target == ErrOwnedElsewhere }

// NewID returns a fresh random identifier with the given prefix ("ws", "g", ...).
func NewID(prefix string) string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic("store: no randomness: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	return prefix + "_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Role is what a principal may do in a workspace: owner > build > use.
type Role string

// The roles, strongest first.
const (
	RoleOwner Role = "owner"
	RoleBuild Role = "build"
	RoleUse   Role = "use"
)

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleBuild:
		return 2
	case RoleUse:
		return 1
	}
	return 0
}

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether r includes need.
func (r Role) Allows(need Role) bool { return r.Valid() && r.rank() >= need.rank() }

// Min returns the weaker of r and o.
func (r Role) Min(o Role) Role {
	if o.rank() < r.rank() {
		return o
	}
	return r
}

// User is a person with a login.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Password is the encoded password hash (opaque to the store); empty when the user has none.
	Password json.RawMessage `json:"password,omitempty"`
	Created  time.Time       `json:"created"`
}

// Token is a bearer credential, stored under the SHA-256 of its text only.
type Token struct {
	Hash    string    `json:"hash"`
	UserID  string    `json:"user"`
	AgentID string    `json:"agent,omitempty"` // set for an agent's token
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"` // zero: never
}

// Agent is a principal owned by one user with a subset of that user's access.
type Agent struct {
	ID        string     `json:"id"`
	Owner     string     `json:"owner"`
	Name      string     `json:"name"`
	Scope     AgentScope `json:"scope"`
	Created   time.Time  `json:"created"`
	TokenHash string     `json:"tokenHash"`
}

// AgentScope lists the workspaces an agent may reach and how far.
type AgentScope struct {
	Workspaces map[WorkspaceID]ScopeEntry `json:"workspaces"`
}

// ScopeEntry is an agent's access to one workspace: at most Role, on the named gadgets ("*":
// all of them), and Gatekeepers: the owner's gatekeeper accounts the agent's Code Mode env
// holds there, by binding name (name -> account id).
type ScopeEntry struct {
	Role        Role              `json:"role"`
	Gadgets     []string          `json:"gadgets"`
	Gatekeepers map[string]string `json:"gatekeepers,omitempty"`
}

// Workspace is a unit of ownership and sharing.
type Workspace struct {
	ID            WorkspaceID    `json:"id"`
	Name          string         `json:"name"`
	Owner         string         `json:"owner"`
	Created       time.Time      `json:"created"`
	Collaborators []Collaborator `json:"collaborators,omitempty"`
	ShareLinks    []ShareLink    `json:"shareLinks,omitempty"`
	// ObserverRequirements names, per role, the gatekeeper bindings ("GADGET.NAME") that a
	// collaborator with that role (or a higher one) must be able to read with an account of
	// their own before the workspace shows them anything (kernel/observers.go).
	ObserverRequirements map[Role][]string `json:"observerRequirements,omitempty"`
}

// Collaborator is a user a workspace is shared with.
type Collaborator struct {
	UserID string `json:"user"`
	Role   Role   `json:"role"`
	// Via is the share link that added the collaborator ("" when added by name).
	Via string `json:"via,omitempty"`
	// Observers maps a required binding ("GADGET.NAME", Workspace.ObserverRequirements) to
	// the collaborator's own account they picked to show they can read it themselves.
	Observers map[string]string `json:"observers,omitempty"`
}

// ShareLink lets whoever holds its key join a workspace with Role; only the key's hash is kept.
type ShareLink struct {
	ID      string    `json:"id"`
	Role    Role      `json:"role"`
	KeyHash string    `json:"keyHash"`
	Created time.Time `json:"created"`
}

// Access is one workspace a user reaches, with the role.
type Access struct {
	Workspace WorkspaceID
	Role      Role
}

// Gadget is a gadget's record: name, grants, immutable code versions and bindings.
type Gadget struct {
	ID       GadgetID  `json:"id"`
	Name     string    `json:"name"`
	Grants   []string  `json:"grants"`
	Versions []Version `json:"versions"`
	// Current is the number of the version that runs.
	Current int `json:"current"`
	// Bindings maps a binding name to the gadget it reaches.
	Bindings map[string]GadgetID `json:"bindings,omitempty"`
	// Gatekeepers maps a binding name to the gatekeeper account (GatekeeperAccount.ID) the
	// gadget reaches under it.
	Gatekeepers map[string]string `json:"gatekeepers,omitempty"`
	Created     time.Time         `json:"created"`
}

// Version is one immutable code version of a gadget; its code is stored by SHA256, and its
// browser UI script (client.js), if any, by Client. Both are code blobs (Store.Code).
type Version struct {
	Number  int       `json:"number"`
	SHA256  string    `json:"sha256"`
	Size    int       `json:"size"`
	Client  string    `json:"client,omitempty"`
	Created time.Time `json:"created"`
	// Chat names the chat whose accepted draft made the version ("" for none).
	Chat string `json:"chat,omitempty"`
}

// CurrentVersion returns the version that runs.
func (g Gadget) CurrentVersion() (Version, bool) {
	for _, v := range g.Versions {
		if v.Number == g.Current {
			return v, true
		}
	}
	return Version{}, false
}

// AuditEntry is one line of a workspace's audit log. Seq is assigned by the store.
type AuditEntry struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Target string    `json:"target"`
	Detail string    `json:"detail"`
}

// AuditQuery selects audit entries: the newest Limit of those older than Before (0: any) whose
// actor is Actor ("": any) and whose action starts with Action.
type AuditQuery struct {
	Limit  int
	Before uint64
	Actor  string
	Action string
}

// Blueprint is a gadget's code and binding shapes, without data.
type Blueprint struct {
	ID          string    `json:"id"`
	Owner       string    `json:"owner"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Grants      []string  `json:"grants"`
	Bindings    []string  `json:"bindings"`
	SHA256      string    `json:"sha256"`
	Size        int       `json:"size"`
	Created     time.Time `json:"created"`
}

// Store is Atelier's durable state.
type Store interface {
	Placement
	// Open returns the workspace's store, consistent with l.Epoch(). ErrNotFound when the
	// workspace does not exist.
	Open(ctx context.Context, ws WorkspaceID, l Lease) (WorkspaceStore, error)

	// Bootstrap creates user name (unless it exists) and stores tok for it, once per data file:
	// it reports false and does nothing when a bootstrap already happened.
	Bootstrap(ctx context.Context, name string, tok Token) (bool, error)
	// CreateUser adds u; ErrConflict when its name is taken.
	CreateUser(ctx context.Context, u User) error
	// PutUser replaces the record of an existing user (the name must not change).
	PutUser(ctx context.Context, u User) error
	User(ctx context.Context, id string) (User, error)
	UserByName(ctx context.Context, name string) (User, error)

	PutToken(ctx context.Context, t Token) error
	Token(ctx context.Context, hash string) (Token, error)
	// DeleteToken removes a token; a missing one is not an error.
	DeleteToken(ctx context.Context, hash string) error

	// PutAgent stores a new agent together with its token.
	PutAgent(ctx context.Context, a Agent, t Token) error
	Agent(ctx context.Context, id string) (Agent, error)
	// Agents lists the agents of user owner.
	Agents(ctx context.Context, owner string) ([]Agent, error)
	// DeleteAgent removes an agent and its token.
	DeleteAgent(ctx context.Context, id string) error

	// CreateWorkspace adds a new workspace.
	CreateWorkspace(ctx context.Context, w Workspace) error
	// Workspace returns a workspace's record as last committed, without opening it (the
	// owner's WorkspaceStore.Workspace is the one its writes go through).
	Workspace(ctx context.Context, id WorkspaceID) (Workspace, error)
	// Workspaces lists the workspaces user reaches (owned or shared), with the role.
	Workspaces(ctx context.Context, user string) ([]Access, error)

	// Code returns the component bytes with the given SHA-256 (hex).
	Code(ctx context.Context, sha256 string) ([]byte, error)

	// PutBlueprint stores b with its code.
	PutBlueprint(ctx context.Context, b Blueprint, code []byte) error
	Blueprint(ctx context.Context, id string) (Blueprint, error)
	// Blueprints lists the blueprints of user owner.
	Blueprints(ctx context.Context, owner string) ([]Blueprint, error)

	// PutGatekeeper stores an installed gatekeeper package with its archive (ErrConflict when
	// installed already); DeleteGatekeeper removes it with every account connected to it.
	PutGatekeeper(ctx context.Context, g GatekeeperRecord, archive []byte) error
	Gatekeepers(ctx context.Context) ([]GatekeeperRecord, error)
	Gatekeeper(ctx context.Context, id string) (GatekeeperRecord, []byte, error)
	DeleteGatekeeper(ctx context.Context, id string) error
	// UpdateGatekeeper replaces an installed gatekeeper's record, keeping its archive
	// (ErrNotFound when it is not installed).
	UpdateGatekeeper(ctx context.Context, g GatekeeperRecord) error

	// PutAccount stores a new connected gatekeeper account (its gatekeeper must exist).
	PutAccount(ctx context.Context, a GatekeeperAccount) error
	Account(ctx context.Context, id string) (GatekeeperAccount, error)
	// UpdateAccount replaces an existing account's record, keeping its kv state (ErrNotFound
	// when it is gone).
	UpdateAccount(ctx context.Context, a GatekeeperAccount) error
	// Accounts lists the accounts of user owner.
	Accounts(ctx context.Context, owner string) ([]GatekeeperAccount, error)
	DeleteAccount(ctx context.Context, id string) error
	// AccountState, ListAccountState and UpdateAccountState read and change an account's own
	// kv state (gkstate.go); it is deleted with the account.
	AccountState(ctx context.Context, account, key string) ([]byte, bool, error)
	ListAccountState(ctx context.Context, account, prefix string, limit int) ([]StateEntry, error)
	UpdateAccountState(ctx context.Context, account string, ops []StateOp, quota int64) error

	// DueSchedules lists every workspace's schedules due at or before before.
	DueSchedules(ctx context.Context, before time.Time) ([]DueSchedule, error)
	// HookRef returns the index entry of hook id (ErrNotFound when no workspace has it);
	// HookRefs lists every hook's, in id order (hooks.go).
	HookRef(ctx context.Context, id string) (HookRef, error)
	HookRefs(ctx context.Context) ([]HookRef, error)

	// PutModel stores a new model (ErrConflict when its ID is taken); Models lists those of
	// owner ("" lists the instance-wide ones); DeleteModel removes one (ErrNotFound when
	// missing).
	PutModel(ctx context.Context, m Model) error
	Model(ctx context.Context, id string) (Model, error)
	Models(ctx context.Context, owner string) ([]Model, error)
	DeleteModel(ctx context.Context, id string) error
	// AgentInstructions returns the admin's instructions for every agent of the server (""
	// when none); PutAgentInstructions replaces them ("" removes them).
	AgentInstructions(ctx context.Context) (string, error)
	PutAgentInstructions(ctx context.Context, text string) error

	// Quotas returns the quotas the admin set (zero fields: not set); PutQuotas replaces them.
	Quotas(ctx context.Context) (quota.Limits, error)
	PutQuotas(ctx context.Context, l quota.Limits) error
	// UserUsage tallies what user owns in the fields of the user quotas (quota.User): the
	// workspaces it owns, their gadgets and schedules, its agents, models and gatekeeper accounts, and
	// StoredBytes: its workspaces' gadget state and code versions plus its blueprints' code.
	// It reads the user's own records, not the whole data file.
	UserUsage(ctx context.Context, user string) (quota.Limits, error)

	Close() error
}

// Placement decides which node runs a workspace.
type Placement interface {
	// Acquire takes the workspace's lease with a new, higher epoch; a previous lease is lost.
	Acquire(ctx context.Context, ws WorkspaceID) (Lease, error)
	// Lookup returns the node holding the workspace's lease and its epoch (may be stale).
	Lookup(ctx context.Context, ws WorkspaceID) (NodeID, Epoch, error)
}

// Lease is the right to run a workspace until Lost is closed.
type Lease interface {
	Epoch() Epoch
	// Lost is closed on expiry, revocation or a takeover: the holder must stop the workspace.
	Lost() <-chan struct{}
	// Release gives the lease up.
	Release(ctx context.Context) error
}

// WorkspaceStore is one open workspace's state under a lease. Reads see every committed
// write; writes happen only through Commit.
type WorkspaceStore interface {
	// Workspace returns the workspace's record.
	Workspace() (Workspace, error)
	// Gadgets returns every gadget record, in name order.
	Gadgets() ([]Gadget, error)
	// Get returns a gadget's value under key.
	Get(gadget GadgetID, key []byte) ([]byte, bool, error)
	// List calls fn with each key starting with prefix, in key order, until fn returns false.
	// k and v are valid only during the call.
	List(gadget GadgetID, prefix []byte, fn func(k, v []byte) bool) error
	// Usage returns the bytes of a gadget's keys plus values.
	Usage(gadget GadgetID) (int64, error)
	// Audit returns up to q.Limit entries that match q, newest first.
	Audit(q AuditQuery) ([]AuditEntry, error)
	// ActionsBefore returns the newest limit entries of the gatekeeper action log whose IDs
	// are below before (0: no bound), in ID order.
	ActionsBefore(before uint64, limit int) ([]QueuedAction, error)
	// PendingActions returns the actions waiting for a decision, in ID order (an index: it
	// does not read the whole log).
	PendingActions() ([]QueuedAction, error)
	// Rules returns the auto-approval rules.
	Rules() ([]ApprovalRule, error)
	// Schedules returns the workspace's schedules, in ID order.
	Schedules() ([]Schedule, error)
	// Hooks returns the workspace's hooks, in ID order.
	Hooks() ([]Hook, error)
	// Chats returns the workspace's chat records, in ID order; Chat one of them.
	Chats() ([]Chat, error)
	Chat(id string) (Chat, error)
	// ChatMessages returns the newest limit messages of chat whose IDs are below before (0:
	// no bound), in ID order.
	ChatMessages(chat string, before uint64, limit int) ([]ChatMessage, error)
	// Draft returns the chat's draft; false when it has none.
	Draft(chat string) (Draft, bool, error)
	// HasDraft reports whether the chat has a draft, without reading it.
	HasDraft(chat string) (bool, error)
	// Commit applies muts atomically, iff the lease's epoch is still the workspace's:
	// otherwise it returns ErrFenced and writes nothing. It returns once muts are durable.
	Commit(ctx context.Context, muts []Mutation) error
	// Chain returns a new, empty CommitChain.
	Chain() CommitChain
	Close() error
}

// CommitChain orders the commits of one writer that starts its next change before the last
// one is durable (a gadget actor behind its output gate). Commits submitted to a chain are
// applied in submission order, each atomically and under the same checks as Commit; once one
// fails, every later one fails with ErrChainBroken without writing anything, since it may have
// been computed from the failed writes. Commits of different chains are independent.
type CommitChain interface {
	// Submit queues muts and returns without waiting for them to be durable; the Pending
	// tells when they are. It is not safe to call concurrently with itself.
	Submit(muts []Mutation) *Pending
}

// MutationKind says what a Mutation does.
type MutationKind int

// The mutations.
const (
	MutSetKV MutationKind = iota + 1
	MutDeleteKV
	MutPutGadget
	MutDeleteGadget // the record and all its state
	MutPutWorkspace
	MutDeleteWorkspace // everything in it
	MutAppendAudit
	MutPutCode
	MutPutAction      // an entry of the gatekeeper action log
	MutPutRule        // an auto-approval rule
	MutDeleteRule     // withdraw an auto-approval rule
	MutPutSchedule    // a schedule of the workspace (and its next run in the server-wide index)
	MutDeleteSchedule // cancel a schedule
	MutPutChat        // a chat's record (chats.go)
	MutDeleteChat     // a chat with its messages and draft
	MutPutChatMessage // a message of a chat
	MutPutDraft       // a chat's draft
	MutDeleteDraft    // drop a chat's draft
	MutPutHook        // a hook of the workspace (and its server-wide index entry, hooks.go)
	MutDeleteHook     // remove a hook
)

// Mutation is one change inside a workspace; build them with the functions below.
type Mutation struct {
	Kind      MutationKind
	Gadget    GadgetID
	Key       []byte
	Value     []byte // a kv value, or code for MutPutCode
	Record    *Gadget
	Workspace *Workspace
	Audit     *AuditEntry
	Action    *QueuedAction
	Rule      *ApprovalRule
	Schedule  *Schedule
	Chat      *Chat
	Message   *ChatMessage
	Draft     *Draft
	Hook      *Hook
}

// SetKV stores value under key in gadget g's state.
func SetKV(g GadgetID, key, value []byte) Mutation {
	return Mutation{Kind: MutSetKV, Gadget: g, Key: key, Value: value}
}

// DeleteKV removes key from gadget g's state.
func DeleteKV(g GadgetID, key []byte) Mutation {
	return Mutation{Kind: MutDeleteKV, Gadget: g, Key: key}
}

// PutGadget creates or replaces a gadget record.
func PutGadget(g Gadget) Mutation { return Mutation{Kind: MutPutGadget, Gadget: g.ID, Record: &g} }

// DeleteGadget removes a gadget record and its state.
func DeleteGadget(g GadgetID) Mutation { return Mutation{Kind: MutDeleteGadget, Gadget: g} }

// PutWorkspace replaces the workspace's record (name, collaborators, share links).
func PutWorkspace(w Workspace) Mutation { return Mutation{Kind: MutPutWorkspace, Workspace: &w} }

// DeleteWorkspace removes the workspace with everything in it.
func DeleteWorkspace() Mutation { return Mutation{Kind: MutDeleteWorkspace} }

// AppendAudit adds an entry to the audit log.
func AppendAudit(e AuditEntry) Mutation { return Mutation{Kind: MutAppendAudit, Audit: &e} }

// PutCode stores component code under its SHA-256 (content-addressed, shared).
func PutCode(code []byte) Mutation { return Mutation{Kind: MutPutCode, Value: code} }

// Check refuses a mutation that cannot be applied, before any write (Commit runs it; a
// replicated store runs it before publishing).
func (m Mutation) Check() error {
	switch m.Kind {
	case MutSetKV, MutDeleteKV:
		if len(m.Key) == 0 || len(m.Key) > MaxKey {
			return fmt.Errorf("key of %d bytes: want 1 to %d: %w", len(m.Key), MaxKey, ErrTooLarge)
		}
		if len(m.Value) > MaxValue {
			return fmt.Errorf("value of %d bytes exceeds %d: %w", len(m.Value), MaxValue, ErrTooLarge)
		}
		if m.Gadget == "" {
			return errors.New("kv mutation without a gadget")
		}
	case MutPutGadget:
		if m.Record == nil || m.Record.ID == "" {
			return errors.New("gadget mutation without a record id")
		}
	case MutDeleteGadget:
		if m.Gadget == "" {
			return errors.New("gadget deletion without an id")
		}
	case MutPutWorkspace:
		if m.Workspace == nil {
			return errors.New("workspace mutation without a record")
		}
	case MutAppendAudit:
		if m.Audit == nil {
			return errors.New("audit mutation without an entry")
		}
	case MutPutAction, MutPutRule, MutDeleteRule:
		return m.checkQueue()
	case MutPutSchedule, MutDeleteSchedule:
		return m.checkSchedule()
	case MutPutChat, MutDeleteChat, MutPutChatMessage, MutPutDraft, MutDeleteDraft:
		return m.checkChat()
	case MutPutHook, MutDeleteHook:
		return m.checkHook()
	case MutDeleteWorkspace, MutPutCode:
	default:
		return fmt.Errorf("unknown mutation kind %d", m.Kind)
	}
	return nil
}
