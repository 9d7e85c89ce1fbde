// Package agent is the agent at the centre of a chat: it implements kernel.AgentRunner, so the
// kernel hands it a ChatRun (which acts as the chatting user, never more) and it drives one
// model through host/agent/provider in a loop of turns: stream the model's reply (each piece
// of text goes out at once as a "delta" event), store the assistant message, run its tool calls
// through the ChatRun, store their bounded outputs, and call the model again, until the model
// ends its turn, a tool needs a person, the run is stopped, or MaxTurns is reached.
//
// The model can call only the tools of this package (tools.go); code changes go to the chat's
// draft, never into a running gadget, and executeCode runs dry unless told otherwise. What a tool
// returns goes back to the model as a tool result and nothing else: the loop never reads the
// model's text for commands, so text planted in a gadget's data can steer the model at most
// into calling those same tools, each checked by the kernel as the user.
package agent
