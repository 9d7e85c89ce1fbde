//go:build wasip1

package host

import (
	"errors"

	"atelier/sdk/go/cabi"
)

//go:wasmimport atelier:host/events@0.1.0 publish
func eventsPublish(topic, payload string, ret uint32)

// Publish sends payload (JSON text) to the gadget's subscribers under topic
// (`atelier:host/events.publish`).
func Publish(topic, payload string) error {
	ret := cabi.Ret()
	eventsPublish(topic, payload, ret) // result<_, string>: tag@0, err string@4
	if cabi.Load8(ret) == 0 {
		return nil
	}
	return errors.New("publish " + topic + ": " + cabi.TakeString(cabi.Load32(ret+4), cabi.Load32(ret+8)))
}
