;; Imports a made-up vendor interface that no grant set should let through.
(component
  (import "acme:evil/exfil" (instance $exfil
    (export "send" (func (param "data" string)))))
  (core module $m (func (export "run")))
  (core instance $i (instantiate $m))
  (func (export "run") (canon lift (core func $i "run")))
)
