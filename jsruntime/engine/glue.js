// The engine's JavaScript half (engine.c embeds it). It is evaluated once per instance, before
// any user code, as a function of `native`, the C functions behind the component's imports;
// `native` stays in this closure, so user code reaches the imports only through the objects
// built here. The intrinsics used later are captured now, before user code can replace them.
(function (native) {
  'use strict';
  const { create, defineProperty, freeze, getOwnPropertyNames, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const ObjectPrototype = Object.prototype;
  const { stringify, parse } = JSON;
  const { apply, construct } = Reflect;
  const isArray = Array.isArray;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const promiseResolve = Promise.resolve;
  const promiseReject = Promise.reject;
  const resolve = (v) => apply(promiseResolve, PromiseCtor, [v]);
  const reject = (e) => apply(promiseReject, PromiseCtor, [e]);
  const StringCtor = String;
  const MapCtor = Map;
  const mapSet = Map.prototype.set;
  const ProxyCtor = Proxy;

  // text renders one console argument.
  function text(v) {
    if (typeof v === 'string') return v;
    if (v instanceof ErrorCtor) {
      const head = `${v.name}: ${v.message}`;
      return typeof v.stack === 'string' && v.stack !== '' ? `${head}\n${v.stack}` : head;
    }
    if (v !== null && typeof v === 'object') {
      try {
        const s = stringify(v);
        if (s !== undefined) return s;
      } catch {
        // circular or not serialisable: fall back to String
      }
    }
    try {
      return StringCtor(v);
    } catch {
      return '[unprintable]';
    }
  }

  function logger(level) {
    return function (...args) {
      let line = '';
      for (let i = 0; i < args.length; i++) line += (i > 0 ? ' ' : '') + text(args[i]);
      native.log(level, line);
    };
  }
  const info = logger(1);
  defineProperty(globalThis, 'console', {
    value: freeze({ debug: logger(0), log: info, info, warn: logger(2), error: logger(3) }),
    writable: true,
    configurable: true,
  });

  // callBinding runs one binding call and returns a promise of its result, as RPC stubs do.
  function callBinding(name, method, args) {
    let out;
    try {
      out = native.call(name, method, stringify(args));
    } catch (e) {
      return reject(e);
    }
    return resolve(parse(out));
  }

  function json(value) {
    const s = stringify(value);
    return s === undefined ? 'null' : s;
  }

  // error describes a thrown value as the JSON of {name, message, stack}. The object is
  // written by hand: stringify consults toJSON on objects (which user code may have added to
  // Object.prototype), never on strings.
  function errorJSON(name, message, stack) {
    return `{"name":${stringify(name)},"message":${stringify(message)},"stack":${stringify(stack)}}`;
  }
  function error(e) {
    if (e instanceof ErrorCtor) {
      return errorJSON(text(e.name), text(e.message), typeof e.stack === 'string' ? e.stack : '');
    }
    return errorJSON('', `uncaught ${text(e)}`, '');
  }

  // run starts a snippet: ns is its module namespace, bindings [[name, [method...]]...].
  function run(ns, bindings) {
    const fn = ns.default;
    if (typeof fn !== 'function') {
      throw new TypeErrorCtor('a snippet must export a default function: export default async function (env, ctx) { ... }');
    }
    const env = create(null);
    const names = [];
    for (const [name, methods] of bindings) {
      const stub = create(null);
      for (const method of methods) {
        defineProperty(stub, method, { value: (...args) => callBinding(name, method, args), enumerable: true });
      }
      defineProperty(env, name, { value: strict(freeze(stub), `env.${name} has no method`, `its methods are: ${methods.join(', ')}`), enumerable: true });
      names.push(name);
    }
    const listed = names.length === 0 ? 'env holds no bindings here' : `the bindings are: ${names.join(', ')}`;
    return resolve(fn(strict(freeze(env), 'env has no binding', `${listed} (see listBindings)`), freeze(create(null))));
  }

  // strict wraps a frozen object so that reading a name it lacks throws a TypeError that names
  // it ("what NAME; hint") instead of giving undefined. Symbols, then and toJSON still read as
  // undefined, so that await, JSON.stringify and printing work.
  function strict(target, what, hint) {
    return new ProxyCtor(target, {
      get(t, k) {
        if (k in t || typeof k !== 'string' || k === 'then' || k === 'toJSON') return t[k];
        throw new TypeErrorCtor(`${what} ${stringify(k)}; ${hint}`);
      },
    });
  }

  // strays reports the promises a snippet left running when it returned: they are cancelled.
  function strays() {
    native.log(2, 'the snippet returned while promises it started were still running; they were cancelled (await them to keep their work)');
  }

  // The JS gadget, once loaded.
  let gadget = null;
  let methods = null;

  function key(k) {
    if (typeof k !== 'string') throw new TypeErrorCtor('storage keys are strings');
    return k;
  }
  function encode(value) {
    const s = stringify(value);
    if (s === undefined) throw new TypeErrorCtor('storage values must be JSON values');
    return s;
  }
  // The gadget's durable state: JSON values under string keys, synchronous (await works too).
  const storage = freeze({
    get(k) {
      const s = native.kvGet(key(k));
      return s === undefined ? undefined : parse(s);
    },
    put(k, value) {
      if (k !== null && typeof k === 'object') {
        const ops = [];
        for (const name of getOwnPropertyNames(k)) ops.push(['set', name, encode(k[name])]);
        native.kvBatch(ops);
        return;
      }
      native.kvSet(key(k), encode(value));
    },
    delete(k) {
      if (isArray(k)) {
        const ops = [];
        for (const name of k) ops.push(['delete', key(name)]);
        native.kvBatch(ops);
        return;
      }
      native.kvDelete(key(k));
    },
    list(options) {
      const prefix = options && options.prefix !== undefined ? StringCtor(options.prefix) : '';
      const limit = options && options.limit !== undefined ? options.limit >>> 0 : 1000;
      const out = new MapCtor();
      for (const [k, s] of native.kvList(prefix, limit)) apply(mapSet, out, [k, parse(s)]);
      return out;
    },
  });
  const events = freeze({
    publish(topic, value) {
      native.publish(StringCtor(topic), encode(value));
    },
  });
  // this.env: any name is a stub, any method of it a call; the host decides what exists.
  const stubs = create(null);
  const env = new ProxyCtor(create(null), {
    get(_, name) {
      if (typeof name !== 'string' || name === 'then') return undefined;
      if (stubs[name] === undefined) {
        stubs[name] = new ProxyCtor(create(null), {
          get(_, method) {
            if (typeof method !== 'string' || method === 'then') return undefined;
            return (...args) => callBinding(name, method, args);
          },
        });
      }
      return stubs[name];
    },
  });

  // load constructs the gadget from its server.js namespace and returns its public methods:
  // functions of the class's prototype chain, but not `constructor` or names starting with _.
  function load(ns) {
    const G = ns.Gadget;
    if (typeof G !== 'function' || G.prototype === undefined) {
      throw new TypeErrorCtor('server.js must export class Gadget');
    }
    const names = [];
    for (let p = G.prototype; p !== null && p !== ObjectPrototype; p = getPrototypeOf(p)) {
      for (const name of getOwnPropertyNames(p)) {
        const d = getOwnPropertyDescriptor(p, name);
        if (name !== 'constructor' && name[0] !== '_' && typeof d.value === 'function' && !names.includes(name)) names.push(name);
      }
    }
    for (const [name, value] of [['storage', storage], ['events', events], ['env', env]]) {
      defineProperty(G.prototype, name, { value, configurable: true });
    }
    gadget = construct(G, [freeze({ storage, events }), env]);
    methods = create(null);
    for (const name of names) methods[name] = true;
    return names;
  }

  // call runs a public method with the JSON array argsText and returns a promise of its result.
  function call(method, argsText) {
    if (methods === null || methods[method] !== true) {
      throw new TypeErrorCtor(`the gadget has no method ${stringify(method)}`);
    }
    const args = parse(argsText);
    if (!isArray(args)) throw new TypeErrorCtor('the arguments must be a JSON array');
    return resolve(apply(gadget[method], gadget, args));
  }

  return { run, load, call, json, error, strays };
});
