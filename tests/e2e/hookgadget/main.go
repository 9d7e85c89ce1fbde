//go:build wasip1

// Command hookgadget is the test gadget of tests/e2e/hooks_test.go (wit/hooker.wit): it
// registers hooks through atelier:host/hooks and keeps the payloads its hook method gets in its
// kv state, so a test sees that a fire ran and changed the gadget's state. Regenerate the
// bindings after changing the WIT with
//
//	atelier bindgen --lang go --world hooker --package bindings --out tests/e2e/hookgadget/bindings tests/e2e/hookgadget/wit wit/gadget wit/host
package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"atelier/tests/e2e/hookgadget/bindings"
)

func main() {}

func init() { bindings.Export(gadget{}) }

// gadget implements the world's exports.
type gadget struct{}

// Watch registers a hook and returns {id, url, source, secret (base64)} as JSON text: the
// test signs requests with the secret, as the service does.
func (gadget) Watch(binding, event, method, params string) (string, error) {
	h, err := bindings.HooksRegister(binding, event, method, params)
	if err != nil {
		return "", err
	}
	if h.Source == "webhook" && (len(h.Secret) != 32 || h.Url == "") {
		return "", fmt.Errorf("webhook hook %s came without its secret or URL", h.Id)
	}
	out, err := json.Marshal(map[string]string{"id": h.Id, "url": h.Url, "source": h.Source, "secret": base64.StdEncoding.EncodeToString(h.Secret)})
	return string(out), err
}

// Watching lists the ids of the gadget's hooks.
func (gadget) Watching() []string {
	ids := []string{}
	for _, h := range bindings.HooksList() {
		if len(h.Secret) != 0 {
			panic("list returned a hook's secret")
		}
		ids = append(ids, h.Id)
	}
	return ids
}

// Unwatch removes a hook.
func (gadget) Unwatch(id string) error { return bindings.HooksRemove(id) }

// OnEvent keeps payload under the next key of "got/".
func (gadget) OnEvent(payload string) {
	n := len(received())
	if err := bindings.KvSet(fmt.Sprintf("got/%06d", n), []byte(payload)); err != nil {
		panic(err)
	}
}

// Refuse fails every time.
func (gadget) Refuse(payload string) error {
	return fmt.Errorf("refused a payload of %d bytes", len(payload))
}

// Tally counts a payload under the key "tally".
func (gadget) Tally(payload string) {
	if err := bindings.KvSet("tally", binary.LittleEndian.AppendUint64(nil, tallied()+1)); err != nil {
		panic(err)
	}
}

// Tallied returns the count.
func (gadget) Tallied() uint64 { return tallied() }

func tallied() uint64 {
	v, err := bindings.KvGet("tally")
	if err != nil {
		panic(err)
	}
	if v == nil || len(*v) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(*v)
}

// Received returns the payloads kept.
func (gadget) Received() []string { return received() }

func received() []string {
	entries, err := bindings.KvList("got/", 1000)
	if err != nil {
		panic(err)
	}
	out := []string{}
	for _, e := range entries {
		out = append(out, string(e.Value))
	}
	return out
}
