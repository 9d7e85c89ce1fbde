;; A component with no imports that exports atelier:probe/twins: two records with the same
;; fields, an alias of one, and a resource of its own, laid out as wit-component lays out an
;; exported interface (core functions lifted, then passed through a nested component). Its WIT
;; is twins.wit. Build: sdk/build-gadget.sh --lang wat sdk/wit/witdecode/testdata/twins twins.wasm
(component
  (core module $code
    (memory (export "memory") 1)
    (func (export "id") (param i32) (result i32) local.get 0)
    (func (export "swap") (param i32 i32) (result i32) i32.const 0))
  (core instance $code (instantiate $code))
  (alias core export $code "memory" (core memory $memory))
  (type $pt (record (field "x" s32) (field "y" s32)))
  (type $counter (resource (rep i32)))
  (func $swap (param "a" $pt) (result $pt) (canon lift (core func $code "swap") (memory $memory)))
  (func $new (param "start" u32) (result (own $counter)) (canon lift (core func $code "id")))
  (func $get (param "self" (borrow $counter)) (result u32) (canon lift (core func $code "id")))
  (component $twins
    (type $pt (record (field "x" s32) (field "y" s32)))
    (import "import-type-point" (type $ipoint (eq $pt)))
    (import "import-type-counter" (type $icounter (sub resource)))
    (import "import-func-swap" (func $swap (param "a" $ipoint) (result $ipoint)))
    (import "import-constructor-counter" (func $new (param "start" u32) (result (own $icounter))))
    (import "import-method-counter-get" (func $get (param "self" (borrow $icounter)) (result u32)))
    (type $point-def (record (field "x" s32) (field "y" s32)))
    (export $point "point" (type $point-def))
    (type $size-def (record (field "x" s32) (field "y" s32)))
    (export $size "size" (type $size-def))
    (export $coord "coord" (type $point))
    (export $counter "counter" (type $icounter))
    (export "swap" (func $swap) (func (param "a" $size) (result $coord)))
    (export "[constructor]counter" (func $new) (func (param "start" u32) (result (own $counter))))
    (export "[method]counter.get" (func $get) (func (param "self" (borrow $counter)) (result u32)))
  )
  (instance $twins (instantiate $twins
    (with "import-type-point" (type $pt))
    (with "import-type-counter" (type $counter))
    (with "import-func-swap" (func $swap))
    (with "import-constructor-counter" (func $new))
    (with "import-method-counter-get" (func $get))
  ))
  (export "atelier:probe/twins@0.1.0" (instance $twins))
)
