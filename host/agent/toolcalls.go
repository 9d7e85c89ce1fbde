package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"atelier/host/kernel"
)

// decodeArgs reads a tool call's arguments into v (a struct whose fields are pointers or
// values with json tags): it must be one JSON object with no property the schema lacks, and
// every name in required must be present and not null.
func decodeArgs(tool string, raw json.RawMessage, v any, required ...string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		return fmt.Errorf("the arguments of %s are not a JSON object (%v); call it again with one JSON object as its schema says", tool, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the arguments of %s do not match its schema (%v); call it again as its schema says", tool, err)
	}
	var missing []string
	for _, name := range required {
		if p, ok := present[name]; !ok || string(p) == "null" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s needs %s; call it again with them", tool, strings.Join(missing, ", "))
	}
	return nil
}

// asJSON renders a tool's structured output for the model.
func asJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("render the tool's output as JSON: %w", err)
	}
	return string(b), nil
}

func listBindings(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	if err := decodeArgs("listBindings", raw, &struct{}{}); err != nil {
		return "", wait{}, err
	}
	bs, err := run.ListBindings(ctx)
	if err != nil {
		return "", wait{}, err
	}
	out, err := asJSON(bs)
	return out, wait{}, err
}

func describeBinding(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decodeArgs("describeBinding", raw, &a, "name"); err != nil {
		return "", wait{}, err
	}
	out, err := run.DescribeBinding(ctx, a.Name)
	return out, wait{}, err
}

func executeCode(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Code       string `json:"code"`
		TypeScript bool   `json:"typescript"`
		DryRun     *bool  `json:"dryRun"`
	}
	if err := decodeArgs("executeCode", raw, &a, "code"); err != nil {
		return "", wait{}, err
	}
	dry := a.DryRun == nil || *a.DryRun
	res, err := run.ExecuteCode(ctx, a.Code, kernel.CodeOptions{TypeScript: a.TypeScript, DryRun: dry})
	if err != nil {
		return "", wait{}, err
	}
	var w wait
	if d := res.DryRun; d != nil && (d.ID == "" || len(d.Gadgets)+len(d.Actions) == 0) {
		res.DryRun = nil // wrote nothing (nothing is held): a plain result
	} else if d != nil {
		w.dryRun = d
	}
	out, err := asJSON(res)
	if err != nil {
		return "", wait{}, err
	}
	if w.dryRun != nil {
		out += "\n\nThis dry run wrote to gadget state or would queue gatekeeper actions: the person now sees its diff and commits or discards it. Your turn ends here."
	}
	if res.Error != nil {
		return "", w, fmt.Errorf("the snippet failed: %s", out)
	}
	return out, w, nil
}

func readFile(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Gadget string `json:"gadget"`
		File   string `json:"file"`
	}
	if err := decodeArgs("readFile", raw, &a, "gadget", "file"); err != nil {
		return "", wait{}, err
	}
	out, err := run.ReadFile(ctx, a.Gadget, a.File)
	return out, wait{}, err
}

func writeFile(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Gadget  string `json:"gadget"`
		File    string `json:"file"`
		Content string `json:"content"`
	}
	if err := decodeArgs("writeFile", raw, &a, "gadget", "file", "content"); err != nil {
		return "", wait{}, err
	}
	f, err := run.WriteFile(ctx, a.Gadget, a.File, a.Content)
	if err != nil {
		return "", wait{}, err
	}
	return draftNote(f), wait{}, nil
}

func editFile(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Gadget string `json:"gadget"`
		File   string `json:"file"`
		Old    string `json:"old"`
		New    string `json:"new"`
	}
	if err := decodeArgs("editFile", raw, &a, "gadget", "file", "old", "new"); err != nil {
		return "", wait{}, err
	}
	f, err := run.EditFile(ctx, a.Gadget, a.File, a.Old, a.New)
	if err != nil {
		return "", wait{}, err
	}
	return draftNote(f), wait{}, nil
}

// draftNote tells the model what its change did to the draft.
func draftNote(f kernel.DraftFile) string {
	return fmt.Sprintf("%s/%s is %s in the draft (the person reviews and deploys it):\n%s", f.Gadget, f.File, f.Status, f.Diff)
}

func createGadget(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Name      string            `json:"name"`
		Files     map[string]string `json:"files"`
		Blueprint string            `json:"blueprint"`
	}
	if err := decodeArgs("createGadget", raw, &a, "name"); err != nil {
		return "", wait{}, err
	}
	if (len(a.Files) == 0) == (a.Blueprint == "") {
		return "", wait{}, fmt.Errorf("createGadget needs files or blueprint, not both and not neither; call it again with one")
	}
	if err := run.CreateGadget(ctx, a.Name, a.Files, a.Blueprint); err != nil {
		return "", wait{}, err
	}
	return fmt.Sprintf("gadget %q is in the draft; it is created when the person accepts the draft", a.Name), wait{}, nil
}

func listBlueprints(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	if err := decodeArgs("listBlueprints", raw, &struct{}{}); err != nil {
		return "", wait{}, err
	}
	bs, err := run.ListBlueprints(ctx)
	if err != nil {
		return "", wait{}, err
	}
	out, err := asJSON(bs)
	return out, wait{}, err
}

func requestConnection(ctx context.Context, run kernel.ChatRun, raw json.RawMessage) (string, wait, error) {
	var a struct {
		Gatekeeper string `json:"gatekeeper"`
		Binding    string `json:"binding"`
		Gadget     string `json:"gadget"`
		Reason     string `json:"reason"`
	}
	if err := decodeArgs("requestConnection", raw, &a, "gatekeeper", "binding", "reason"); err != nil {
		return "", wait{}, err
	}
	req := kernel.ConnectionRequest{Gatekeeper: a.Gatekeeper, Binding: a.Binding, Gadget: a.Gadget, Reason: a.Reason}
	if err := run.RequestConnection(ctx, req); err != nil {
		return "", wait{}, err
	}
	return "the person is asked to connect an account; the chat resumes when they answer", wait{connection: true}, nil
}
