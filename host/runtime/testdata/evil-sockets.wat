;; Imports wasi:sockets/tcp: never in the WASI baseline, so refused unless granted.
(component
  (import "wasi:sockets/tcp@0.2.0" (instance $tcp))
  (core module $m (func (export "run")))
  (core instance $i (instantiate $m))
  (func (export "run") (canon lift (core func $i "run")))
)
