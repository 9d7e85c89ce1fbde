package kernel

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"atelier/host/quota"
	"atelier/host/store"
)

// Scopes of a model.
const (
	ModelScopeUser     = "user"     // the caller's own
	ModelScopeInstance = "instance" // the admin's, for every user
)

// MaxAgentInstructions bounds the admin's instructions for every agent, in bytes: they go
// into every run's system prompt.
const MaxAgentInstructions = 16 << 10

// ModelInfo describes a model to its users; the API key is never returned (HasKey says
// whether there is one).
type ModelInfo struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Provider      string `json:"provider"`
	BaseURL       string `json:"baseUrl"`
	Model         string `json:"model"`
	ContextWindow int    `json:"contextWindow"`
	Scope         string `json:"scope"` // ModelScopeUser or ModelScopeInstance
	HasKey        bool   `json:"hasKey"`
	// Refused, when set, says that the server refuses the agent's requests to BaseURL (a
	// loopback or private address the admin did not allow) and how the admin allows it.
	Refused string `json:"refused,omitempty"`
}

// modelInfo describes m.
func (k *Kernel) modelInfo(m store.Model) ModelInfo {
	scope := ModelScopeUser
	if m.Owner == "" {
		scope = ModelScopeInstance
	}
	return ModelInfo{ID: m.ID, Name: m.Name, Provider: m.Provider, BaseURL: m.BaseURL, Model: m.Model,
		ContextWindow: m.ContextWindow, Scope: scope, HasKey: len(m.SealedKey) > 0, Refused: k.modelRefusal(m.BaseURL)}
}

// modelSealContext binds a model's sealed API key to its record: a sealed key copied into
// another model's record does not open.
func modelSealContext(m store.Model) string { return "model:" + m.ID + ":" + m.Owner }

// ListModels lists the models the caller may use: their own, then the instance-wide ones,
// each by name. An agent sees its owner's.
func (a *Authed) ListModels(ctx context.Context) ([]ModelInfo, error) {
	if err := a.p.check(); err != nil {
		return nil, err
	}
	out := []ModelInfo{}
	for _, owner := range []string{a.p.userID, ""} {
		ms, err := a.k.st.Models(ctx, owner)
		if err != nil {
			return nil, wrapErr(err, "list models")
		}
		slices.SortFunc(ms, func(x, y store.Model) int { return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.ID, y.ID)) })
		for _, m := range ms {
			out = append(out, a.k.modelInfo(m))
		}
	}
	return out, nil
}

// AddModel adds a model for the caller (users only) or, with in.Instance, for every user (the
// admin only). Its API key is sealed in the vault and never returned by any call; a model
// with a key needs the server's key file (FAILED_PRECONDITION without). A user has at most
// the "models" quota of models.
func (a *Authed) AddModel(ctx context.Context, in ModelInput) (ModelInfo, error) {
	what := "addModel"
	if in.Instance {
		if err := a.adminOnly(what); err != nil {
			return ModelInfo{}, err
		}
	} else if err := a.userOnly(what); err != nil {
		return ModelInfo{}, err
	}
	if err := in.check(); err != nil {
		return ModelInfo{}, err
	}
	k := a.k
	m := store.Model{ID: store.NewID("mdl"), Owner: a.p.userID, Name: in.Name, Provider: in.Provider, BaseURL: in.BaseURL,
		Model: in.Model, ContextWindow: in.ContextWindow, Created: time.Now().UTC()}
	if in.Instance {
		m.Owner = ""
	}
	if in.APIKey != "" {
		box, err := k.box()
		if err != nil {
			return ModelInfo{}, wrapErr(err, "add model: its API key cannot be sealed")
		}
		m.SealedKey = box.Seal([]byte(in.APIKey), modelSealContext(m))
	}
	put := func() error { return k.st.PutModel(ctx, m) }
	var err error
	if in.Instance {
		err = k.putInstanceModel(ctx, put)
	} else {
		err = k.charge(ctx, m.Owner, quota.Limits{Models: 1}, put)
	}
	if err != nil {
		return ModelInfo{}, wrapErr(err, "add model")
	}
	info := k.modelInfo(m)
	k.log.Info("model added", "id", m.ID, "by", a.p.username, "scope", info.Scope, "provider", m.Provider, "model", m.Model)
	return info, nil
}

// putInstanceModel runs put, which stores a new instance-wide model, unless there are
// maxInstanceModels of them already; the instance's models are counted under the lock of
// the user quotas' state of owner "".
func (k *Kernel) putInstanceModel(ctx context.Context, put func() error) error {
	u := k.lockUser("")
	defer k.unlockUser("", u)
	ms, err := k.st.Models(ctx, "")
	if err != nil {
		return err
	}
	if len(ms) >= maxInstanceModels {
		return fail(CodeResourceExhausted, "the server has %d instance-wide models, the most it keeps; remove one first", len(ms))
	}
	return put()
}

// RemoveModel removes one of the caller's models (users only), or an instance-wide one (the
// admin only). Another user's model is NOT_FOUND, as a missing one is.
func (a *Authed) RemoveModel(ctx context.Context, id string) error {
	if err := a.userOnly("removeModel"); err != nil {
		return err
	}
	m, err := a.k.st.Model(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && m.Owner != "" && m.Owner != a.p.userID):
		return fail(CodeNotFound, "remove model: you have no model %.60q; listModels shows yours", id)
	case err != nil:
		return wrapErr(err, "remove model")
	case m.Owner == "" && !a.p.admin():
		return fail(CodeForbidden, "remove model: %s is an instance-wide model; only the server's admin may remove it", id)
	}
	if err := a.k.st.DeleteModel(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return wrapErr(err, "remove model")
	}
	a.k.log.Info("model removed", "id", id, "by", a.p.username)
	return nil
}

// modelSpec returns model modelID as user userID may use it (their own or an instance-wide
// one), with its API key opened. Any other model, another user's included, is NOT_FOUND.
func (k *Kernel) modelSpec(ctx context.Context, userID, modelID string) (ModelSpec, error) {
	m, err := k.st.Model(ctx, modelID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && m.Owner != "" && m.Owner != userID) {
		return ModelSpec{}, fail(CodeNotFound, "no model %.60q: listModels shows the models you may use", modelID)
	}
	if err != nil {
		return ModelSpec{}, wrapErr(err, "model %s", modelID)
	}
	spec := ModelSpec{ID: m.ID, Name: m.Name, Provider: m.Provider, BaseURL: m.BaseURL, Model: m.Model, ContextWindow: m.ContextWindow}
	if len(m.SealedKey) > 0 {
		box, err := k.box()
		if err != nil {
			return ModelSpec{}, wrapErr(err, "model %s: its API key cannot be opened", m.ID)
		}
		key, err := box.Open(m.SealedKey, modelSealContext(m))
		if err != nil {
			return ModelSpec{}, wrapErr(err, "model %s: its API key does not open (was the vault key replaced?); remove the model and add it again", m.ID)
		}
		spec.APIKey = string(key)
	}
	return spec, nil
}

// SetAgentInstructions replaces the admin's instructions for every agent of the server (the
// admin only): text of at most MaxAgentInstructions bytes of UTF-8, "" to remove them.
func (a *Authed) SetAgentInstructions(ctx context.Context, text string) error {
	if err := a.adminOnly("setAgentInstructions"); err != nil {
		return err
	}
	if len(text) > MaxAgentInstructions {
		return fail(CodeInvalidArgument, "set agent instructions: the text is %d bytes, over the limit of %d; shorten it", len(text), MaxAgentInstructions)
	}
	if !utf8.ValidString(text) {
		return fail(CodeInvalidArgument, "set agent instructions: the text is not UTF-8")
	}
	if err := a.k.st.PutAgentInstructions(ctx, text); err != nil {
		return wrapErr(err, "set agent instructions")
	}
	a.k.log.Info("agent instructions changed", "bytes", len(text))
	return nil
}

// GetAgentInstructions returns the admin's instructions for every agent ("" when none).
func (a *Authed) GetAgentInstructions(ctx context.Context) (string, error) {
	if err := a.p.check(); err != nil {
		return "", err
	}
	text, err := a.k.st.AgentInstructions(ctx)
	if err != nil {
		return "", wrapErr(err, "get agent instructions")
	}
	return text, nil
}

// agentInstructions returns the admin's instructions for every agent, for a run's system
// prompt; when they cannot be read, the run goes without them and the server logs why.
func (k *Kernel) agentInstructions(ctx context.Context) string {
	text, err := k.st.AgentInstructions(ctx)
	if err != nil {
		k.log.Error("the agent instructions could not be read; the agent runs without them", "err", err)
		return ""
	}
	return text
}
