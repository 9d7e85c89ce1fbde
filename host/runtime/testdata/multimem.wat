;; Four core modules, each with its own linear memory (one page to start) and a `grow` that
;; grows it by the given number of pages and traps when the growth is refused. One instance
;; of this component holds four memories: its memory budget must cover them together.
(component
  (core module $m
    (memory 1)
    (func (export "grow") (param i32) (result i32)
      (local i32)
      (local.set 1 (memory.grow (local.get 0)))
      (if (i32.eq (local.get 1) (i32.const -1)) (then unreachable))
      (local.get 1)))
  (core instance $a (instantiate $m))
  (core instance $b (instantiate $m))
  (core instance $c (instantiate $m))
  (core instance $d (instantiate $m))
  (func (export "grow-a") (param "pages" u32) (result u32) (canon lift (core func $a "grow")))
  (func (export "grow-b") (param "pages" u32) (result u32) (canon lift (core func $b "grow")))
  (func (export "grow-c") (param "pages" u32) (result u32) (canon lift (core func $c "grow")))
  (func (export "grow-d") (param "pages" u32) (result u32) (canon lift (core func $d "grow")))
)
