package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestModelsPerOwnerSurviveReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db := open(t, path)
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	models := []Model{
		{ID: "mdl_1", Owner: "u1", Name: "gpt", Provider: "openai", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o", SealedKey: []byte("sealed"), Created: now},
		{ID: "mdl_2", Owner: "u2", Name: "claude", Provider: "anthropic", BaseURL: "https://api.anthropic.com", Model: "claude-sonnet-4", Created: now},
		{ID: "mdl_3", Owner: "", Name: "local", Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen", ContextWindow: 8192, Created: now},
	}
	for _, m := range models {
		if err := db.PutModel(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutModel(ctx, Model{ID: "mdl_1", Owner: "u2"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a taken id: %v, want ErrConflict", err)
	}
	db.Close()
	db = open(t, path)
	for owner, want := range map[string]string{"u1": "mdl_1", "u2": "mdl_2", "": "mdl_3"} {
		got, err := db.Models(ctx, owner)
		if err != nil || len(got) != 1 || got[0].ID != want {
			t.Fatalf("models of %q: %+v, %v; want only %s", owner, got, err, want)
		}
	}
	m, err := db.Model(ctx, "mdl_1")
	if err != nil || string(m.SealedKey) != "sealed" || m.BaseURL != models[0].BaseURL || !m.Created.Equal(now) {
		t.Fatalf("model mdl_1: %+v, %v", m, err)
	}
	if u, err := db.UserUsage(ctx, "u1"); err != nil || u.Models != 1 {
		t.Fatalf("usage of u1: %+v, %v; want 1 model", u, err)
	}
	if err := db.DeleteModel(ctx, "mdl_1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteModel(ctx, "mdl_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := db.Model(ctx, "mdl_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted model: %v, want ErrNotFound", err)
	}
	if got, err := db.Models(ctx, "u1"); err != nil || len(got) != 0 {
		t.Fatalf("models of u1 after the delete: %+v, %v", got, err)
	}
}

func TestAgentInstructionsSurviveReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i.db")
	db := open(t, path)
	if text, err := db.AgentInstructions(ctx); err != nil || text != "" {
		t.Fatalf("new file: %q, %v; want none", text, err)
	}
	if err := db.PutAgentInstructions(ctx, "Answer in French."); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = open(t, path)
	if text, err := db.AgentInstructions(ctx); err != nil || text != "Answer in French." {
		t.Fatalf("reopened: %q, %v", text, err)
	}
	if err := db.PutAgentInstructions(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if text, err := db.AgentInstructions(ctx); err != nil || text != "" {
		t.Fatalf("removed: %q, %v", text, err)
	}
}
