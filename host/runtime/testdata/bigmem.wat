;; Needs 200 pages (12.5 MiB) of linear memory to instantiate.
(component
  (core module $m (memory (export "memory") 200) (func (export "run")))
  (core instance $i (instantiate $m))
  (func (export "run") (canon lift (core func $i "run")))
)
