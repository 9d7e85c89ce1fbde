;; Test guest: a component that imports wasi:sockets (the network resource and the function
;; that hands out the instance's network). No gadget is ever granted sockets, so the runtime
;; must refuse it before instantiation, naming the import.
(component
  (import "wasi:sockets/network@0.2.0" (instance $network
    (export "network" (type (sub resource)))))
  (alias export $network "network" (type $net))
  (import "wasi:sockets/instance-network@0.2.0" (instance $instance-network
    (alias outer 1 $net (type $n))
    (export "network" (type $exported (eq $n)))
    (type $own (own $exported))
    (export "instance-network" (func (result $own)))))
  (core module $m
    (func (export "run")))
  (core instance $i (instantiate $m))
  (func (export "run") (canon lift (core func $i "run")))
)
