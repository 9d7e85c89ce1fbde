;; Test gadget whose exports collide once mapped to JavaScript names: the interface
;; test:x/api at two versions (both "api"), and GETX and GET-X (both "GETX"; the component
;; model itself refuses names that differ only in case, such as get-x and get-X).
(component
  (core module $M
    (func (export "one") (result i32) (i32.const 1))
    (func (export "two") (result i32) (i32.const 2)))
  (core instance $m (instantiate $M))
  (func $one (result u32) (canon lift (core func $m "one")))
  (func $two (result u32) (canon lift (core func $m "two")))
  (instance $v1 (export "get" (func $one)))
  (instance $v2 (export "get" (func $two)))
  (export "test:x/api@0.1.0" (instance $v1))
  (export "test:x/api@0.2.0" (instance $v2))
  (export "GETX" (func $one))
  (export "GET-X" (func $two))
)
