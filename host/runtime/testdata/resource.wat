;; Resource component: exports the resource `counter` (its representation is the count) with
;; a constructor, a method taking borrow<counter>, a static function returning own<counter>
;; and a function taking own<counter>, which drops it. `dropped` counts destructor runs.
(component
  (core module $State
    (global $dropped (mut i32) (i32.const 0))
    (func (export "dtor") (param i32) (global.set $dropped (i32.add (global.get $dropped) (i32.const 1))))
    (func (export "dropped") (result i32) (global.get $dropped)))
  (core instance $state (instantiate $State))
  (alias core export $state "dtor" (core func $dtor))
  (type $counter-def (resource (rep i32) (dtor (func $dtor))))
  (export $counter "counter" (type $counter-def))
  (core func $new (canon resource.new $counter-def))
  (core func $drop (canon resource.drop $counter-def))
  (core func $rep (canon resource.rep $counter-def))
  (core module $Impl
    (import "r" "new" (func $new (param i32) (result i32)))
    (import "r" "drop" (func $drop (param i32)))
    (import "r" "rep" (func $rep (param i32) (result i32)))
    (func (export "ctor") (param i32) (result i32) (call $new (local.get 0)))
    ;; A borrow of the component's own resource arrives as its representation.
    (func (export "get") (param i32) (result i32) (local.get 0))
    (func (export "make") (param i32) (result i32) (call $new (i32.mul (local.get 0) (i32.const 10))))
    ;; An own arrives as a handle: read the count, then drop it (which runs the destructor).
    (func (export "consume") (param i32) (result i32)
      (local $n i32)
      (local.set $n (call $rep (local.get 0)))
      (call $drop (local.get 0))
      (local.get $n)))
  (core instance $impl (instantiate $Impl (with "r" (instance
    (export "new" (func $new)) (export "drop" (func $drop)) (export "rep" (func $rep))))))
  (func (export "[constructor]counter") (param "n" u32) (result (own $counter))
    (canon lift (core func $impl "ctor")))
  (func (export "[method]counter.get") (param "self" (borrow $counter)) (result u32)
    (canon lift (core func $impl "get")))
  (func (export "[static]counter.make") (param "n" u32) (result (own $counter))
    (canon lift (core func $impl "make")))
  (func (export "consume") (param "c" (own $counter)) (result u32)
    (canon lift (core func $impl "consume")))
  (func (export "dropped") (result u32) (canon lift (core func $state "dropped")))
)
