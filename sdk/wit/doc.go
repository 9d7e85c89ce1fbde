// Package wit reads WIT, the interface language of the WebAssembly component model, into a
// resolved model that bindings generators work from. It is pure Go.
//
// Load reads packages from the file system (a file, or a directory of one package's .wit files
// with its dependencies in deps/, as wit-parser lays them out); LoadSource reads one file held
// in memory. Both parse, then resolve: every `use`, world item, `include` and type name is
// linked to what it names, across files and packages, and cycles (interfaces that use each
// other, worlds that include each other, types that contain themselves) are refused. Errors
// come as an ErrorList of *Error, each at file:line:column and saying what was expected:
//
//	wit/host/kv.wit:12:9: expected '>' to close list<...>, found ','
//
// # What is read
//
// Package declarations (`package ns:name@1.2.3;`, and nested `package ns:name { ... }`
// blocks), interfaces, worlds (imports and exports of interfaces by name, of plain-named
// interfaces `import x: path;`, of functions and of inline interfaces; `include` with `with`
// renames), `use` inside interfaces and worlds and at the top level of a file (with `as`),
// every type (bool, s8..s64, u8..u64, f32/f64 and their old spellings float32/float64, char,
// string, list<T>, list<T, N>, option, result in all four forms, tuple, map, future, stream,
// error-context, own/borrow handles), records, variants, enums, flags, type aliases,
// resources with a constructor, methods and static functions, async functions,
// `%`-escaped identifiers, semantic versions, feature gates (@since, @unstable,
// @deprecated), and doc comments (`///` and `/** */`), attached to the item they precede.
//
// Not read: nested namespaces (`a:b:c`), `@external-id`, and string literals.
//
// # The model
//
// A Resolve holds Packages in dependency order. A Package has Interfaces and Worlds; an
// Interface has Types (TypeDef, `use`d names included as DefUse) and Funcs; a World has its
// own Types, Imports, Exports and Includes, and, after resolution, AllImports and AllExports
// with the included worlds merged in. A Type is a type as written at a use site; a Named, Own
// or Borrow type points at its TypeDef, whose Underlying follows aliases and uses to the
// definition. Print writes a model back as WIT text that loads to the same model.
package wit
