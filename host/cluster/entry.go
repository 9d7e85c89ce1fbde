package cluster

import (
	"errors"

	"atelier/host/quota"
	"atelier/host/store"
)

// The replicated log: one stream whose entries every node applies, in order, to its replica.
const (
	logStream = "ATL_LOG"
	// globalSubject carries the writes outside any workspace (users, tokens, agents, ...).
	globalSubject = "atl.log.g"
	// maxEntry is the largest entry published as it is; a larger one (a commit of many large
	// values) travels in the blob store and the log carries a reference to it.
	maxEntry = 6 << 20
)

// epochSubject carries a workspace's epoch entries, one per Acquire: the stream sequence of
// the latest one is the workspace's fencing token.
func epochSubject(ws store.WorkspaceID) string { return "atl.log.ws." + string(ws) + ".e" }

// commitSubject carries a workspace's commits; each is appended only while the epoch subject's
// last sequence is the committer's epoch.
func commitSubject(ws store.WorkspaceID) string { return "atl.log.ws." + string(ws) + ".c" }

// validWorkspaceID reports whether ws can be part of a subject: letters, digits, _ and - only
// (the ids store.NewID makes).
func validWorkspaceID(ws store.WorkspaceID) bool { return checkName(string(ws)) == nil }

// The operations of log entries: one per write method of store.Store, plus the epoch and
// commit entries of workspaces and the reference to an entry kept in the blob store.
const (
	opBootstrap          = "bootstrap"
	opCreateUser         = "createUser"
	opPutUser            = "putUser"
	opPutToken           = "putToken"
	opDeleteToken        = "deleteToken"
	opPutAgent           = "putAgent"
	opDeleteAgent        = "deleteAgent"
	opCreateWorkspace    = "createWorkspace"
	opPutBlueprint       = "putBlueprint"
	opPutGatekeeper      = "putGatekeeper"
	opDeleteGatekeeper   = "deleteGatekeeper"
	opPutAccount         = "putAccount"
	opUpdateAccount      = "updateAccount"
	opUpdateGatekeeper   = "updateGatekeeper"
	opDeleteAccount      = "deleteAccount"
	opUpdateAccountState = "updateAccountState"
	opRetention          = "retention"
	opPutQuotas          = "putQuotas"
	opPutModel           = "putModel"
	opDeleteModel        = "deleteModel"
	opPutInstructions    = "putAgentInstructions"
	opEpoch              = "epoch"
	opCommit             = "commit"
	opBlobEntry          = "blobEntry"
)

// entry is one record of the log, encoded by encodeEntry (commits in a binary format, the
// other ops in JSON). Op says which fields are set. Everything a replica must decide alike
// (ids, times) is fixed in it by the publisher.
type entry struct {
	Op         string                   `json:"op"`
	User       *store.User              `json:"user,omitempty"`
	Token      *store.Token             `json:"token,omitempty"`
	Agent      *store.Agent             `json:"agent,omitempty"`
	Workspace  *store.Workspace         `json:"workspace,omitempty"`
	Blueprint  *store.Blueprint         `json:"blueprint,omitempty"`
	Gatekeeper *store.GatekeeperRecord  `json:"gatekeeper,omitempty"`
	Account    *store.GatekeeperAccount `json:"account,omitempty"`
	Model      *store.Model             `json:"model,omitempty"`
	// ID names the record a deletion removes (a token's hash, an agent, gatekeeper, account
	// or model id) or the account whose state changes.
	ID       string          `json:"id,omitempty"`
	StateOps []store.StateOp `json:"stateOps,omitempty"`
	Quota    int64           `json:"quota,omitempty"`
	// Retention: the retention limits every replica uses from this entry on.
	Retention *store.Retention `json:"retention,omitempty"`
	// Quotas: the quotas the admin set (opPutQuotas).
	Quotas *quota.Limits `json:"quotas,omitempty"`
	// Instructions: the admin's instructions for every agent (opPutInstructions; "" removes
	// them).
	Instructions *string `json:"instructions,omitempty"`
	// Blob is the SHA-256 of the bytes in the blob store that go with the entry: a blueprint's
	// code, a gatekeeper's archive, or (opBlobEntry) the entry itself.
	Blob string `json:"blob,omitempty"`
	// WS, Node and Epoch: the workspace of an epoch or commit entry, the node that acquired it,
	// and (commit) the epoch the commit was made under.
	WS      store.WorkspaceID `json:"ws,omitempty"`
	Node    store.NodeID      `json:"node,omitempty"`
	Epoch   uint64            `json:"epoch,omitempty"`
	Commits []commitRecord    `json:"-"`
}

// commitRecord is one commit of a commit entry; the entry's commits are applied in order,
// each atomically. Commits with the same non-zero Chain belong to one CommitChain: once one
// fails, the later ones of that chain in the entry fail with store.ErrChainBroken.
type commitRecord struct {
	Chain uint64
	Muts  []mutation
}

// mutation is a store.Mutation on the log: the code of a MutPutCode travels in the blob store
// (Value is empty and Blob names it).
type mutation struct {
	store.Mutation
	Blob string `json:"blob,omitempty"`
}

var errMalformed = errors.New("malformed log entry")

// complete reports whether e has the fields its op needs.
func (e entry) complete() bool {
	switch e.Op {
	case opBootstrap:
		return e.User != nil && e.Token != nil
	case opPutAgent:
		return e.Agent != nil && e.Token != nil
	case opCreateUser, opPutUser:
		return e.User != nil
	case opPutToken:
		return e.Token != nil
	case opDeleteToken, opDeleteAgent, opDeleteGatekeeper, opDeleteAccount, opUpdateAccountState, opDeleteModel:
		return true
	case opCreateWorkspace:
		return e.Workspace != nil
	case opPutBlueprint:
		return e.Blueprint != nil && e.Blob != ""
	case opPutGatekeeper:
		return e.Gatekeeper != nil && e.Blob != ""
	case opPutAccount, opUpdateAccount:
		return e.Account != nil
	case opUpdateGatekeeper:
		return e.Gatekeeper != nil
	case opRetention:
		return e.Retention != nil
	case opPutQuotas:
		return e.Quotas != nil
	case opPutModel:
		return e.Model != nil
	case opPutInstructions:
		return e.Instructions != nil
	case opEpoch, opCommit:
		return validWorkspaceID(e.WS)
	case opBlobEntry:
		return e.Blob != ""
	}
	return false
}
