package kernel_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"atelier/host/kernel"
)

// seenRun is what a scripted agent saw of its run.
type seenRun struct {
	model        kernel.ModelSpec
	instructions string
}

// nextRun returns what the next run saw, failing after 30 seconds without one.
func nextRun(t *testing.T, runs <-chan seenRun) seenRun {
	t.Helper()
	select {
	case r := <-runs:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no agent run started")
		return seenRun{}
	}
}

// TestChatsUseTheUsersModels: a chat runs on the chatting user's own model or an instance-wide
// one, with its key opened for the agent and the admin's instructions in its context; another
// user's model is NOT_FOUND, even in a workspace they share.
func TestChatsUseTheUsersModels(t *testing.T) {
	dir := t.TempDir()
	var log syncBuffer
	runs := make(chan seenRun, 4)
	agent := agentFunc(func(ctx context.Context, run kernel.ChatRun) error {
		wc, err := run.Context(ctx)
		if err != nil {
			return err
		}
		runs <- seenRun{model: run.Model(), instructions: wc.Instructions}
		return nil
	})
	s := startServer(t, filepath.Join(dir, "a.db"), withVault(dir, &log), func(c *kernel.Config) { c.Agent = agent })
	adm, _ := admin(t, s)
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	await(t, adm.Call(ctx, "setAgentInstructions", "be brief"))
	shared := await(t, adm.Call(ctx, "addModel", model("team", map[string]any{"instance": true, "apiKey": "sk-team-1"}))).(map[string]any)["id"].(string)
	own := await(t, ada.Call(ctx, "addModel", model("mine", map[string]any{"apiKey": "sk-ada-1", "contextWindow": 8192}))).(map[string]any)["id"].(string)
	ws := ada.Call(ctx, "createWorkspace", "home")
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "addCollaborator", "bob", "build"))

	for _, tc := range []struct{ model, key string }{{own, "sk-ada-1"}, {shared, "sk-team-1"}} {
		await(t, ws.Call(ctx, "newChat", "hello", tc.model))
		got := nextRun(t, runs)
		if got.model.ID != tc.model || got.model.APIKey != tc.key || got.instructions != "be brief" {
			t.Fatalf("the run of a chat on %s saw %+v", tc.model, got)
		}
	}
	bws := bob.Call(ctx, "openWorkspace", wsID)
	refused(t, bws.Call(ctx, "newChat", "hello", own), "NOT_FOUND", "listModels shows the models you may use")
	await(t, bws.Call(ctx, "newChat", "hello", shared))
	if got := nextRun(t, runs); got.model.APIKey != "sk-team-1" {
		t.Fatalf("bob's chat on the instance model saw %+v", got.model)
	}
}
