;; Big-result component: each export returns n elements that the guest fills in its own memory
;; (from 64 KiB on, growing it as needed), so tests and benchmarks can make results of any
;; size without a guest toolchain. `points` returns records {x: u32, y: u32, on: bool} (12
;; bytes each); `count` counts its calls in the instance (a fresh instance starts at 1).
(component
  (core module $m
    (memory (export "memory") 1)
    (global $calls (mut i32) (i32.const 0))
    ;; Fills n*size bytes at 64 KiB with the byte `fill` and returns the address of the
    ;; (pointer, length) pair the canonical ABI reads a list or string from.
    (func $make (param $n i32) (param $size i32) (param $fill i32) (result i32)
      (local $bytes i32)
      (local $pages i32)
      (local.set $bytes (i32.mul (local.get $n) (local.get $size)))
      (local.set $pages (i32.add (i32.shr_u (i32.add (local.get $bytes) (i32.const 65535)) (i32.const 16)) (i32.const 1)))
      (if (i32.gt_u (local.get $pages) (memory.size))
        (then (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1)) (then unreachable))))
      (memory.fill (i32.const 65536) (local.get $fill) (local.get $bytes))
      (i32.store (i32.const 0) (i32.const 65536))
      (i32.store (i32.const 4) (local.get $n))
      (i32.const 0))
    (func (export "bools") (param i32) (result i32) (call $make (local.get 0) (i32.const 1) (i32.const 1)))
    (func (export "bytes") (param i32) (result i32) (call $make (local.get 0) (i32.const 1) (i32.const 0x61)))
    (func (export "u32s") (param i32) (result i32) (call $make (local.get 0) (i32.const 4) (i32.const 1)))
    (func (export "text") (param i32) (result i32) (call $make (local.get 0) (i32.const 1) (i32.const 0x61)))
    (func (export "points") (param i32) (result i32) (call $make (local.get 0) (i32.const 12) (i32.const 1)))
    (func (export "count") (result i32)
      (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
      (global.get $calls))
  )
  (core instance $i (instantiate $m))
  (alias core export $i "memory" (core memory $memory))
  (type $point-def (record (field "x" u32) (field "y" u32) (field "on" bool)))
  (export $point "point" (type $point-def))
  (func (export "bools") (param "n" u32) (result (list bool)) (canon lift (core func $i "bools") (memory $memory)))
  (func (export "bytes") (param "n" u32) (result (list u8)) (canon lift (core func $i "bytes") (memory $memory)))
  (func (export "u32s") (param "n" u32) (result (list u32)) (canon lift (core func $i "u32s") (memory $memory)))
  (func (export "text") (param "n" u32) (result string) (canon lift (core func $i "text") (memory $memory) string-encoding=utf8))
  (func (export "points") (param "n" u32) (result (list $point)) (canon lift (core func $i "points") (memory $memory)))
  (func (export "count") (result u32) (canon lift (core func $i "count")))
)
