package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"atelier/host/agent/provider"
	"atelier/host/kernel"
)

// A tool is one thing the model may call: its definition as offered to the model and the code
// that runs it through the ChatRun. do returns the tool's output for the model and what the run
// now waits for, if anything.
type tool struct {
	def provider.Tool
	do  func(ctx context.Context, run kernel.ChatRun, args json.RawMessage) (string, wait, error)
}

// wait is what a tool call leaves the run waiting for: the person's answer to a connection
// request, or their commit or discard of a dry run that wrote.
type wait struct {
	connection bool
	dryRun     *kernel.DryRunInfo
}

// waits reports whether the run must end its turn for a person.
func (w wait) waits() bool { return w.connection || w.dryRun != nil }

// tools are the only tools the model can call, in the order they are offered.
var tools = []tool{
	{def: def("listBindings", "List the bindings of the Code Mode env: the workspace's gadgets and the connected gatekeeper accounts, with their methods.", `{}`, nil),
		do: listBindings},
	{def: def("describeBinding", "Show the TypeScript declaration of one binding of env, with the types of its methods.", `{"name":{"type":"string","description":"the binding's name in env"}}`, []string{"name"}),
		do: describeBinding},
	{def: def("executeCode", "Run a JavaScript (or TypeScript) module against env, the workspace's bindings: its default export (an async function of env) is the result, console lines are returned too. It runs dry by default: writes to gadget state go to a copy and gatekeeper actions are recorded, not done; a dry run that wrote something is shown to the person, who commits or discards it, and your turn ends. Pass dryRun: false only for reads.",
		`{"code":{"type":"string","description":"an ES module whose default export is async (env) => result"},"typescript":{"type":"boolean","description":"strip TypeScript types first"},"dryRun":{"type":"boolean","description":"hold writes for the person (default true)"}}`, []string{"code"}),
		do: executeCode},
	{def: def("readFile", "Read a source file of a gadget (a JS/TS file or client.js) as this chat's draft has it, else as the gadget's current version has it.",
		`{"gadget":{"type":"string"},"file":{"type":"string"}}`, []string{"gadget", "file"}),
		do: readFile},
	{def: def("writeFile", "Write a whole source file of a gadget into this chat's draft (the person reviews the draft and deploys it; nothing runs before).",
		`{"gadget":{"type":"string"},"file":{"type":"string"},"content":{"type":"string"}}`, []string{"gadget", "file", "content"}),
		do: writeFile},
	{def: def("editFile", "Replace the one occurrence of old by new in a source file of a gadget, in this chat's draft. old must occur exactly once: include enough lines around it.",
		`{"gadget":{"type":"string"},"file":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}}`, []string{"gadget", "file", "old", "new"}),
		do: editFile},
	{def: def("createGadget", "Add a new gadget to this chat's draft: a JS gadget of files (server.js exports its RPC methods, client.js is its UI), or one made from a blueprint (by id). Give files or blueprint, not both.",
		`{"name":{"type":"string"},"files":{"type":"object","additionalProperties":{"type":"string"},"description":"file name -> content"},"blueprint":{"type":"string","description":"a blueprint id from listBlueprints"}}`, []string{"name"}),
		do: createGadget},
	{def: def("listBlueprints", "List the person's blueprints (gadget code without data) that createGadget can start from.", `{}`, nil),
		do: listBlueprints},
	{def: def("requestConnection", "Ask the person to bind one of their accounts of a gatekeeper under a binding name, for a gadget or (gadget omitted) for your Code Mode env. Your turn ends; the chat resumes when the person answers.",
		`{"gatekeeper":{"type":"string","description":"the gatekeeper's id or name"},"binding":{"type":"string"},"gadget":{"type":"string"},"reason":{"type":"string","description":"why, in a sentence the person reads"}}`, []string{"gatekeeper", "binding", "reason"}),
		do: requestConnection},
}

// toolDefs are the definitions offered to the model; toolNames lists them for error messages.
var (
	toolDefs  = func() []provider.Tool { return mapTools(func(t tool) provider.Tool { return t.def }) }()
	toolNames = strings.Join(mapTools(func(t tool) string { return t.def.Name }), ", ")
)

func mapTools[T any](f func(tool) T) []T {
	out := make([]T, len(tools))
	for i, t := range tools {
		out[i] = f(t)
	}
	return out
}

// findTool returns the tool called name.
func findTool(name string) (tool, bool) {
	for _, t := range tools {
		if t.def.Name == name {
			return t, true
		}
	}
	return tool{}, false
}

// def builds a tool definition whose schema is an object of properties (a JSON object text)
// with the required ones named; unknown properties are refused.
func def(name, description, properties string, required []string) provider.Tool {
	if required == nil {
		required = []string{}
	}
	req, _ := json.Marshal(required)
	schema := fmt.Sprintf(`{"type":"object","properties":%s,"required":%s,"additionalProperties":false}`, properties, req)
	if !json.Valid([]byte(schema)) {
		panic("BUG: agent: the schema of tool " + name + " is not JSON")
	}
	return provider.Tool{Name: name, Description: description, Schema: json.RawMessage(schema)}
}
