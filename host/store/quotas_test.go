package store

import (
	"path/filepath"
	"testing"
	"time"

	"atelier/host/quota"
)

func TestQuotasSurviveReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	db := open(t, path)
	if l, err := db.Quotas(ctx); err != nil || l != (quota.Limits{}) {
		t.Fatalf("new file: quotas %+v, %v, want none set", l, err)
	}
	want := quota.Limits{Gadgets: 3, StoredBytes: quota.Unlimited}
	if err := db.PutQuotas(ctx, want); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if l, err := open(t, path).Quotas(ctx); err != nil || l != want {
		t.Fatalf("reopened: quotas %+v, %v, want %+v", l, err, want)
	}
}

func TestUserUsageCountsOnlyTheUsersOwn(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "u.db"))
	ws, _ := workspace(t, db) // owned by u1
	g := Gadget{ID: "g1", Name: "a", Current: 2, Versions: []Version{{Number: 1, SHA256: "x", Size: 100}, {Number: 2, SHA256: "y", Size: 50}}}
	s := Schedule{ID: "s1", Gadget: "g1", Method: "m", Args: []byte("[]"), Next: time.Now()}
	if err := ws.Commit(ctx, []Mutation{PutGadget(g), SetKV("g1", []byte("k"), []byte("vvv")), PutSchedule(s)}); err != nil {
		t.Fatal(err)
	}
	shared := Workspace{ID: "ws_other", Name: "theirs", Owner: "u2", Collaborators: []Collaborator{{UserID: "u1", Role: RoleBuild}}}
	if err := db.CreateWorkspace(ctx, shared); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAgent(ctx, Agent{ID: "ag1", Owner: "u1"}, Token{Hash: "h1", UserID: "u1", AgentID: "ag1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAgent(ctx, Agent{ID: "ag2", Owner: "u2"}, Token{Hash: "h2", UserID: "u2", AgentID: "ag2"}); err != nil {
		t.Fatal(err)
	}
	code := []byte("blueprint code")
	if err := db.PutBlueprint(ctx, Blueprint{ID: "bp1", Owner: "u1", SHA256: CodeSHA(code), Size: len(code)}, code); err != nil {
		t.Fatal(err)
	}
	u, err := db.UserUsage(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	want := quota.Limits{Workspaces: 1, Gadgets: 1, Agents: 1, Schedules: 1, StoredBytes: 150 + int64(len("k")+len("vvv")) + int64(len(code))}
	if u != want {
		t.Fatalf("usage of u1 %+v, want %+v", u, want)
	}
	if u, err := db.UserUsage(ctx, "u2"); err != nil || u != (quota.Limits{Workspaces: 1, Agents: 1}) {
		t.Fatalf("usage of u2 %+v, %v", u, err)
	}
}
