/**
 * Node's fetch (undici) cuts a response body after 300 s without data. Exec,
 * attach and watch streams are legitimately silent far longer (a quiet build,
 * `sleep 600`), so on Node those requests go through an Agent without a body
 * timeout. Undici is not importable in Node 20, so its Agent class is taken
 * from the global dispatcher, which a `data:` fetch creates without touching
 * the network. Other runtimes, or a custom global dispatcher (a proxy), are
 * left alone.
 */
const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

let cached: Promise<object | undefined> | undefined;

export function patientDispatcher(): Promise<object | undefined> {
  cached ??= create().catch(() => undefined);
  return cached;
}

async function create(): Promise<object | undefined> {
  if (typeof process === 'undefined' || !process.versions?.node) return undefined;
  const g = globalThis as Record<symbol, unknown>;
  if (g[GLOBAL_DISPATCHER] === undefined) await fetch('data:,').then((r) => r.arrayBuffer());
  const Agent = (g[GLOBAL_DISPATCHER] as { constructor?: unknown } | undefined)?.constructor;
  if (typeof Agent !== 'function' || Agent.name !== 'Agent') return undefined;
  return new (Agent as new (opts: object) => object)({ bodyTimeout: 0 });
}
