import type { NetworkRules } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { forcedName, nameVerdict, splitRules, type SplitRules } from './domain-rules.js';
import type { Attachment } from './egress-nft.js';

/** One egress sandbox as the resolver and proxy see it. */
export interface EgressSandbox {
  /** Runtime instance key. */
  key: string;
  /** The sandbox's id (what an interceptor is given). */
  sandboxId: string;
  attachment: Attachment;
  rules: SplitRules;
}

type LearnedKind = 'allow' | 'deny' | 'forced';
/** The nft set (suffix of the sandbox's chain name) each kind of learned address goes to (see egress-nft.ts). */
const LEARNED_SET: Record<LearnedKind, string> = { allow: 'lallow', deny: 'ldeny', forced: 'lforced' };

/** The longest a learned address is kept in nft (a longer TTL is cut to it); the shortest too. */
const MAX_TTL_S = 3600;
const MIN_TTL_S = 30;

/** An instance key is the sandbox id or `<id>.<hex>` after a rewind (see sandbox-instances.ts). */
export const sandboxIdOf = (key: string) => key.split('.')[0] ?? key;

/**
 * The node's egress sandboxes by their unique host-side address (the remote
 * address of every connection and query the redirect brings to forkd), and
 * the addresses forkd's resolver returned for names their rules name: an
 * allowed name's go to the sandbox's learned-allow set in nft (non-proxied
 * ports), a denied name's to its learned-deny set and to the proxy's check,
 * a tenant's forced-denied name's to its learned-forced set (dropped in nft
 * before any allow) and to the proxy's check.
 */
export class EgressPolicy {
  readonly #table: string;
  readonly #byHost = new Map<string, EgressSandbox>();
  readonly #byKey = new Map<string, EgressSandbox>();
  /** What nft's learned sets were last told (address → until), per kind and key. */
  readonly #learned: Record<LearnedKind, Map<string, Map<string, number>>> = { allow: new Map(), deny: new Map(), forced: new Map() };

  constructor(table: string) {
    this.#table = table;
  }

  set(key: string, attachment: Attachment, rules: NetworkRules): EgressSandbox {
    this.drop(key);
    const sb = { key, sandboxId: sandboxIdOf(key), attachment, rules: splitRules(rules) };
    this.#byHost.set(attachment.hostIp, sb);
    this.#byKey.set(key, sb);
    return sb;
  }

  drop(key: string): void {
    const had = this.#byKey.get(key);
    if (had) this.#byHost.delete(had.attachment.hostIp);
    this.#byKey.delete(key);
    for (const m of Object.values(this.#learned)) m.delete(key);
  }

  /** The sandbox behind a remote address; undefined: not one of this node's (refuse it). */
  byRemote(addr: string): EgressSandbox | undefined {
    return this.#byHost.get(addr.replace(/^::ffff:/, ''));
  }

  /** Whether `addr` was returned for a denied name (forced: a tenant's forced denial's), and is still. */
  learnedDenied(sb: EgressSandbox, addr: string): { denied: boolean; forced: boolean } {
    const live = (kind: LearnedKind) => (this.#learned[kind].get(sb.key)?.get(addr) ?? 0) > Date.now();
    const forced = live('forced');
    return { denied: forced || live('deny'), forced };
  }

  /** Records what the resolver returned for `name` (a name no rule names needs nothing). */
  async learn(sb: EgressSandbox, name: string, a: Array<{ addr: string; ttl: number }>): Promise<void> {
    const verdict = nameVerdict(sb.rules, name);
    if (verdict === 'neutral' || a.length === 0 || this.#byKey.get(sb.key) !== sb) return;
    const kind: LearnedKind = verdict === 'allow' ? 'allow' : forcedName(sb.rules, name) ? 'forced' : 'deny';
    const ttl = (t: number) => Math.min(MAX_TTL_S, Math.max(MIN_TTL_S, t));
    const now = Date.now();
    const known = this.#learned[kind];
    const m = known.get(sb.key) ?? new Map<string, number>();
    known.set(sb.key, m);
    // nft is told only what is new or past half its time there: a proxied request does not spawn nft each time.
    const fresh = a.filter((x) => (m.get(x.addr) ?? 0) - now < (ttl(x.ttl) * 1000) / 2);
    for (const x of fresh) m.set(x.addr, now + ttl(x.ttl) * 1000);
    if (fresh.length === 0) return;
    a = fresh;
    const set = `sb_${sb.attachment.ifname}_${LEARNED_SET[kind]}`;
    // `add` keeps an element's older timeout: delete-then-add refreshes it (both in one atomic batch).
    const els = a.map((x) => `${x.addr} timeout ${ttl(x.ttl)}s`).join(', ');
    const addrs = a.map((x) => x.addr).join(', ');
    const script = `add element inet ${this.#table} ${set} { ${addrs} }\ndelete element inet ${this.#table} ${set} { ${addrs} }\nadd element inet ${this.#table} ${set} { ${els} }\n`;
    await exec('nft', ['-f', '-'], { input: script, allowFailure: true });
  }
}
