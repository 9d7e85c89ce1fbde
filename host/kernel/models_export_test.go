package kernel

import "context"

// ModelSpecOf is modelSpec for the user called username.
func (k *Kernel) ModelSpecOf(ctx context.Context, username, modelID string) (ModelSpec, error) {
	u, err := k.st.UserByName(ctx, username)
	if err != nil {
		return ModelSpec{}, err
	}
	return k.modelSpec(ctx, u.ID, modelID)
}

// AgentInstructions is agentInstructions.
func (k *Kernel) AgentInstructions(ctx context.Context) string { return k.agentInstructions(ctx) }
