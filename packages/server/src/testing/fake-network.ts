import { Duplex, PassThrough } from 'node:stream';
import { join } from 'node:path';
import type { NetworkRules } from '@forkd/protocol';
import type { Network, PortConnection, VethEnds } from '../node/network/network.js';

interface Namespace {
  rules: NetworkRules | undefined;
  /** The process whose namespace was adopted (0: made by prepare). */
  pid: number;
}

/** What a fake sandbox's listener does with a connection: its end of the stream. */
export type FakeListener = (stream: Duplex) => void;

/**
 * A Network in memory, for unit tests without root: namespaces are records
 * (their path is never a real one), a restored veth's host end is the
 * lowest free `fkv<n>`, an `egress` sandbox's host end is in `hostLinks`,
 * and a sandbox "listens" on a port through `listen`. Agrees with NetnsNetwork on everything network-conformance.ts
 * checks.
 */
export class FakeNetwork implements Network {
  readonly sandboxLink = 'eth0';
  readonly namespaces = new Map<string, Namespace>();
  /** Host ends of the veths `egress` rules made (as /sys/class/net would list them). */
  readonly hostLinks = new Set<string>();
  readonly #veths = new Map<string, string>();
  readonly #listeners = new Map<string, FakeListener>();
  readonly #dir: string;

  constructor(dir = '/nonexistent/fake-netns') {
    this.#dir = dir;
  }

  path(id: string): string {
    return join(this.#dir, id);
  }

  async prepare(id: string, rules?: NetworkRules): Promise<string> {
    const had = this.namespaces.get(id);
    this.namespaces.set(id, { rules: rules ?? had?.rules, pid: had?.pid ?? 0 });
    if (rules) await this.#apply(id, rules);
    return this.path(id);
  }

  async adopt(id: string, pid: number, rules?: NetworkRules): Promise<string> {
    this.namespaces.set(id, { rules, pid });
    if (rules) await this.#apply(id, rules);
    return this.path(id);
  }

  async held(id: string): Promise<boolean> {
    return this.namespaces.has(id);
  }

  /** As NetnsNetwork: `egress` has the instance's veth, `none` loopback only. */
  async #apply(id: string, rules: NetworkRules): Promise<void> {
    if (rules.mode === 'none' && !this.#veths.has(id)) return;
    const { host } = await this.restoredVeth(id);
    if (rules.mode === 'egress') this.hostLinks.add(host);
    else this.hostLinks.delete(host);
  }

  async restoredVeth(id: string): Promise<VethEnds> {
    let host = this.#veths.get(id);
    if (!host) {
      const used = new Set(this.#veths.values());
      let n = 1;
      while (used.has(`fkv${n}`)) n++;
      host = `fkv${n}`;
      this.#veths.set(id, host);
    }
    return { sandbox: this.sandboxLink, host };
  }

  async setRules(id: string, rules: NetworkRules): Promise<void> {
    const ns = this.namespaces.get(id);
    if (ns) ns.rules = rules;
    await this.#apply(id, rules);
  }

  async release(id: string): Promise<void> {
    const host = this.#veths.get(id);
    if (host) this.hostLinks.delete(host);
    this.namespaces.delete(id);
    this.#veths.delete(id);
    for (const k of [...this.#listeners.keys()]) if (k.startsWith(`${id}:`)) this.#listeners.delete(k);
  }

  async list(): Promise<string[]> {
    return [...this.namespaces.keys()];
  }

  /** Something in sandbox `id` listening on `port`; the returned function stops it. */
  listen(id: string, port: number, onConnection: FakeListener): () => void {
    const k = `${id}:${port}`;
    this.#listeners.set(k, onConnection);
    return () => this.#listeners.delete(k);
  }

  async connect(id: string, port: number): Promise<PortConnection> {
    const listener = this.namespaces.has(id) ? this.#listeners.get(`${id}:${port}`) : undefined;
    const [ours, theirs] = duplexPair();
    let settle!: (r: { refused: boolean; error?: string }) => void;
    const done = new Promise<{ refused: boolean; error?: string }>((r) => (settle = r));
    if (!this.namespaces.has(id)) {
      ours.end();
      settle({ refused: false, error: `no network namespace for ${id}` });
    } else if (!listener) {
      ours.end();
      settle({ refused: true });
    } else {
      ours.on('close', () => settle({ refused: false }));
      listener(theirs);
    }
    return { stream: ours, done, close: () => ours.destroy() };
  }
}

/** Two connected in-memory duplex streams (node ≥ 22 has stream.duplexPair). */
function duplexPair(): [Duplex, Duplex] {
  const aToB = new PassThrough();
  const bToA = new PassThrough();
  const a = Duplex.from({ readable: bToA, writable: aToB });
  const b = Duplex.from({ readable: aToB, writable: bToA });
  // One end closed cuts the other (a reset, as a socket's peer sees it).
  for (const s of [a, b]) s.on('error', () => {});
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
  return [a, b];
}
