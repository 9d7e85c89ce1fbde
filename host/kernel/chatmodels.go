package kernel

import "context"

// chatModels resolves a chat's model for its chatting user and gives the admin's instructions
// for every agent. The kernel's models store (models.go) implements it; tests swap in a fixed
// set (export_test.go).
type chatModels interface {
	// modelSpec returns model modelID, with its key opened, if user userID may use it.
	modelSpec(ctx context.Context, userID, modelID string) (ModelSpec, error)
	// agentInstructions returns the admin's instructions for every agent ("" for none).
	agentInstructions(ctx context.Context) string
}

// chatModel resolves the model of a run for user userID.
func (k *Kernel) chatModel(ctx context.Context, userID, modelID string) (ModelSpec, error) {
	spec, err := k.models.modelSpec(ctx, userID, modelID)
	if err != nil {
		return ModelSpec{}, wrapErr(err, "the chat's model %s", modelID)
	}
	return spec, nil
}

// chatInstructions returns the admin's instructions for agents.
func (k *Kernel) chatInstructions(ctx context.Context) string {
	return k.models.agentInstructions(ctx)
}
