;; Test gadget shaped like a componentize-qjs build: besides its own function it exports
;; componentize-qjs's internal `init`, which must not be reachable.
;;   hello()   returns 7
;;   init(...) traps if called
(component
  (core module $M
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "init") (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32) unreachable)
    (func (export "hello") (result i32) (i32.const 7)))
  (core instance $m (instantiate $M))
  (alias core export $m "memory" (core memory $memory))
  (alias core export $m "realloc" (core func $realloc))
  (func (export "init") (param "shim" string) (param "script" string) (param "entry-path" (option string)) (param "disable-gc" bool) (result (result (error string)))
    (canon lift (core func $m "init") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (func (export "hello") (result u32) (canon lift (core func $m "hello")))
)
