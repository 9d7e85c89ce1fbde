;; Writes "out1\nout2\npartial" to wasi:cli/stdout and "err!\n" to wasi:cli/stderr (WASI 0.2.0
;; streams), for the console test. `run` takes no arguments.
(component $C
  (import "wasi:io/error@0.2.0" (instance $io-error
    (export "error" (type (sub resource)))))
  (alias export $io-error "error" (type $error))
  (import "wasi:io/streams@0.2.0" (instance $streams
    (alias outer $C $error (type $error'))
    (export "error" (type $err (eq $error')))
    (export "output-stream" (type $os (sub resource)))
    (type $own-err (own $err))
    (type $stream-error' (variant (case "last-operation-failed" $own-err) (case "closed")))
    (export "stream-error" (type $stream-error (eq $stream-error')))
    (type $borrow-os (borrow $os))
    (export "[method]output-stream.blocking-write-and-flush"
      (func (param "self" $borrow-os) (param "contents" (list u8)) (result (result (error $stream-error)))))))
  (alias export $streams "output-stream" (type $output-stream))
  (import "wasi:cli/stdout@0.2.0" (instance $stdout
    (alias outer $C $output-stream (type $os'))
    (export "output-stream" (type $os (eq $os')))
    (type $own-os (own $os))
    (export "get-stdout" (func (result $own-os)))))
  (import "wasi:cli/stderr@0.2.0" (instance $stderr
    (alias outer $C $output-stream (type $os'))
    (export "output-stream" (type $os (eq $os')))
    (type $own-os (own $os))
    (export "get-stderr" (func (result $own-os)))))
  (core module $Mem
    (memory (export "memory") 1)
    (data (i32.const 100) "out1\nout2\npartial")
    (data (i32.const 200) "err!\n"))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (core func $get-stdout (canon lower (func $stdout "get-stdout")))
  (core func $get-stderr (canon lower (func $stderr "get-stderr")))
  (core func $write (canon lower (func $streams "[method]output-stream.blocking-write-and-flush") (memory $memory)))
  (core func $drop (canon resource.drop $output-stream))
  (core module $Main
    (import "host" "get-stdout" (func $get-stdout (result i32)))
    (import "host" "get-stderr" (func $get-stderr (result i32)))
    (import "host" "write" (func $write (param i32 i32 i32 i32)))
    (import "host" "drop" (func $drop (param i32)))
    (func (export "run")
      (local $h i32)
      (local.set $h (call $get-stdout))
      (call $write (local.get $h) (i32.const 100) (i32.const 17) (i32.const 16))
      (call $drop (local.get $h))
      (local.set $h (call $get-stderr))
      (call $write (local.get $h) (i32.const 200) (i32.const 5) (i32.const 16))
      (call $drop (local.get $h))))
  (core instance $main (instantiate $Main (with "host" (instance
    (export "get-stdout" (func $get-stdout))
    (export "get-stderr" (func $get-stderr))
    (export "write" (func $write))
    (export "drop" (func $drop))))))
  (func (export "run") (canon lift (core func $main "run")))
)
