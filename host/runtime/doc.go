// Package runtime runs WebAssembly components on Wasmtime with only the capabilities they were
// granted. It knows components, grants, limits and values; nothing of users, workspaces,
// storage or RPC.
//
// # Use
//
//	rt, err := runtime.New(runtime.Config{CacheDir: dir, Interfaces: []runtime.HostInterface{
//		log.New(), clock.New(time.Now), kv.New(kv.Limits{}), events.New(events.NewBus(), events.Limits{}),
//	}})
//	defer rt.Close()
//	comp, err := rt.Compile(ctx, wasmOrWAT)        // cached on disk by content + engine
//	fmt.Println(comp.Audit())                      // every import/export with its signature
//	inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{
//		Name:    "gadget-42",
//		Grants:  append(runtime.WASIBaseline(), "atelier:host/kv", "atelier:host/log"),
//		Limits:  runtime.Limits{Timeout: time.Second, MaxMemory: 64 << 20},
//		Console: func(l runtime.ConsoleLine) { ... },
//	})
//	res, err := inst.Call(ctx, "atelier:gadget/api#hello", "world")
//
// A Slot (rt.NewSlot) wraps the last two steps and replaces a retired instance on the next call.
//
// # Ownership and concurrency
//
// One Runtime per process owns the Wasmtime engine (epoch interruption, parallel compilation,
// a 4 MiB guest stack, Atelier's memory creator, optional fuel, pooling allocator or
// copy-on-write memory images), the epoch ticker goroutine, the
// artifact cache and one shared linker per combination of host interfaces. Runtime and
// Component are safe for concurrent use. An Instance owns one Wasmtime store; its calls are
// serialised by a mutex, so many instances run in parallel on many goroutines but one instance
// runs one call at a time. Close instances before their component's Runtime.
//
// All cgo lives in internal/capi; this package is plain Go over it. Package wit (pure Go) holds
// the type model and the value conversion, testable without Wasmtime.
//
// # Grants
//
// Grants are unversioned interface names: "atelier:host/kv", "wasi:cli/stdout". Before an
// instance is created, every import of the component is checked (CheckGrants): an import not
// granted is refused with *UngrantedImportError naming the import and the grant that would
// allow it; a granted interface that nothing provides is refused with *UnprovidedImportError.
// WASIBaseline lists the harmless WASI interfaces a caller may grant; wasi:sockets is never in
// it. Host interfaces are defined on an instance's linker only when the component imports them
// (and was granted them). WASI is linked as a whole (Wasmtime's C API cannot link single WASI
// interfaces) only for components that import WASI, and every store's WASI context has no
// arguments, no environment, no stdin, no preopened directory and no network access; stdout and
// stderr are split into lines and go to InstanceConfig.Console.
//
// # Limits
//
// Each call (and instantiation) has a wall-clock deadline (Limits.Timeout or the context's,
// whichever is first; context cancellation also interrupts), enforced by epoch interruption
// with Config.EpochTick resolution. Host functions get it in their context, and a call whose
// deadline passed while a host function ran ends when that function returns (ErrDeadline). An instance's linear memories and tables
// together stay within its memory budget, Limits.MaxMemory; fuel
// (Limits.Fuel) needs Config.Fuel. A guest that traps, runs past its deadline, exhausts its
// fuel or is refused memory at instantiation is retired: the call returns a *TrapError whose
// Kind (ErrTrap, ErrDeadline, ErrFuel, ErrMemory) errors.Is matches, with the guest backtrace.
// A result whose JSON encoding would be larger than Limits.MaxResult (estimated part by part
// while it is lifted, see wit.Overhead) is refused before most of it is copied, and retires
// the instance the same way (ErrResultTooLarge). Wasmtime copies the whole result before that
// (about 72 bytes a list element): a function whose result holds lists gets a memory budget of
// at most Limits.MaxLiftBytes over its type's wit.LiftFactor, and an instance already holding
// more is refused the call before it runs (ErrLiftBound; it lives on).
//
// The memory budget is enforced by Atelier's own memory creator, which charges every memory's
// committed bytes (at creation and each growth) to the instance's one budget, records each
// refusal with a message that names the budget (Instance.MemoryUsed reads the charge),
// maps modules' data images copy-on-write, gives back to the kernel the pages an instance's
// start-up left all zero (they read as zero again when touched), and recycles freed memories,
// scrubbed to zero, for later instances (Config.KeepMemories). A refused memory.grow hands the guest -1 (standard
// Wasm semantics): a guest that copes goes on, and the call succeeds. When a call (or instantiation) fails after the budget refused it
// memory, whatever the guest did next (trap, abort, exit), the *TrapError's Kind is ErrMemory;
// a refusal counts only for the call it happened in, so a later unrelated trap is ErrTrap. A
// deadline or fuel stop in the same call wins (ErrDeadline, ErrFuel). With Config.Pooling or
// Config.MemoryImages, Wasmtime makes the memories, bounds each one alone by MaxMemory and
// refuses growth silently: ErrMemory is
// then reported only for a memory too large at instantiation, and a guest that traps after a
// refused growth is an ErrTrap. (RATIONALE.md explains the trade-off.)
//
// # Values
//
// Calls and host functions take and return JSON-ish Go values; package wit documents the
// mapping for every WIT type (records are ordered.Objects in declaration order, list<u8> is []byte, option is nil or
// the value, results and variants are small maps, and so on). Additionally, at the function
// boundary a WIT `result` is unwrapped: Instance.Call returns the ok payload or a *ResultError
// with the err payload, and a host function returns the ok payload or Fail(errPayload).
//
// # Resources
//
// A resource the guest exports reaches the caller as a wit.Handle (own<R> results, such as
// a constructor's). Passing the handle as a borrow<R> argument lends it for the call; passing
// it as an own<R> argument moves the resource into the guest and the handle becomes unknown;
// Instance.DropResource drops it (the guest's destructor runs). Handles are unique within the
// process and each instance knows only its own: a handle from another instance, one already
// dropped or moved is refused with ErrUnknownHandle before the guest runs, and the instance
// lives on.
//
// A host interface defines the resources guests import from it in HostInterface.Resources
// (name and Drop), and their constructors, methods and static functions as ordinary HostFuncs
// named as in the component model: "[constructor]file", "[method]file.read",
// "[static]file.open". In those host functions (and only there) own<R> and borrow<R> values
// are Resource values, not wit.Handles:
//
//	WIT in a host function   Go argument                         Go result
//	own<R>                   Resource{Own: true}: the host holds  a Resource the host holds
//	                         it now                               (HostCall.NewResource, or an
//	                                                              own<R> argument): the guest
//	                                                              holds it afterwards
//	borrow<R>                Resource{Own: false}, for the call   (not allowed in results)
//
// A Resource carries the instance-local Rep the runtime gave it and the Value the host gave
// HostCall.NewResource (the host keeps no table of its own). Each resource's HostResource.Drop
// runs exactly once: when the guest drops its own<R> handle, when a host function ends one it
// holds with HostCall.DropResource, or, for every resource still live, when the instance is
// closed or retired. A host resource returned by a guest export reaches Instance.Call's caller
// as a wit.Handle like a guest resource (Instance.DropResource drops it, running Drop).
//
// Guest handles are checked by Wasmtime: a guest that presents a handle it dropped or gave away,
// a handle of another resource type, or any number that is not its handle traps (ErrTrap), its
// instance is retired (dropping its resources), and nothing else is affected. Reps are per
// instance, so a guest cannot name another instance's resources at all; a host function that
// returns a Resource of another instance, one that has ended, one the guest already owns, or
// one of the wrong type traps the guest with an error saying which (TrapError.Host). A
// component importing a resource that its host interface does not define is refused before
// instantiation with *UnprovidedImportError ("iface#resource"). A host function may only make
// resources of its own interface (HostCall.NewResource).
package runtime
