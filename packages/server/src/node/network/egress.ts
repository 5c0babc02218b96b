import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { NetworkRules } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { limitsAttachScript, limitsDetachScript, limitsTableScript } from './egress-limits-nft.js';
import { shapeDownload } from './egress-tc.js';
import { attachScript, detachScript, GATEWAY_IP, SANDBOX_IP, SANDBOX_PREFIX, tableScript, type Attachment } from './egress-nft.js';
import type { EgressPorts } from './egress-services.js';
import type { EgressServices } from './egress-services.js';
import type { VethEnds } from './network.js';

export interface EgressOptions {
  /** Where each instance's attachment is recorded (`<key>.json`). */
  dir: string;
  /** forkd's nftables table (`inet <table>`); a node's own, never shared with another's. */
  table: string;
  /** Host-side veth names: `<prefix><n>` (≤ 15 bytes in all). */
  ifPrefix: string;
  /** The /16 the host-side unique addresses come from, as its first two octets (`10.254`). */
  hostNet: string;
  /** The node's resolver and proxy (the table redirects DNS and web traffic to them). */
  services: EgressServices;
}

/** How long applying rules waits for forkd to resolve their denied names (their addresses join the deny set). */
const DENIED_LOOKUP_MS = 2000;

/** The in-sandbox interface, the same in every sandbox (a snapshot's view of it stays valid). */
export const SANDBOX_IF = 'eth0';

/**
 * The host side of `egress` sandboxes: a veth pair per instance, its
 * sandbox end `eth0` with SANDBOX_IP inside, its host end with the gateway
 * address and a route to the instance's unique host-side address, and the
 * instance's rules in forkd's nftables table (see egress-nft.ts).
 */
export class Egress {
  readonly #o: EgressOptions;
  readonly #known = new Map<string, Attachment>();
  #tableReady = false;

  constructor(o: EgressOptions) {
    this.#o = o;
  }

  #file(key: string): string {
    return join(this.#o.dir, `${key}.json`);
  }

  async #recorded(key: string): Promise<Attachment | undefined> {
    const had = this.#known.get(key);
    if (had) return had;
    const text = await readFile(this.#file(key), 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    const a = JSON.parse(text) as Attachment;
    this.#known.set(key, a);
    return a;
  }

  /** The instance's host-side veth name and address, allocated once (the lowest index free on the host). */
  async attachment(key: string): Promise<Attachment> {
    const had = await this.#recorded(key);
    if (had) return had;
    const used = new Set([...this.#known.values()].map((a) => a.ifname));
    // From here to the record in #known nothing is awaited: two instances never pick the same index.
    let n = 1;
    for (; n < 65535; n++) {
      const ifname = `${this.#o.ifPrefix}${n}`;
      if (!used.has(ifname) && !existsSync(`/sys/class/net/${ifname}`)) break;
    }
    const a = { ifname: `${this.#o.ifPrefix}${n}`, hostIp: `${this.#o.hostNet}.${n >> 8}.${n & 255}` };
    this.#known.set(key, a);
    await mkdir(this.#o.dir, { recursive: true, mode: 0o700 });
    await writeFile(this.#file(key), JSON.stringify(a), { mode: 0o600 });
    return a;
  }

  /** The ends a veth restored into `key` gets: this instance's host end (see Network.restoredVeth). */
  async restoredVeth(key: string): Promise<VethEnds> {
    return { sandbox: SANDBOX_IF, host: (await this.attachment(key)).ifname };
  }

  /**
   * Makes the namespace at `netns` match `rules`: with `egress` a veth pair
   * (made here, or by CRIU at a restore), addresses, routes and nftables
   * rules; with `none` no interface but loopback.
   */
  async apply(key: string, netns: string, rules: NetworkRules): Promise<void> {
    // Never attached and no restore made a veth: loopback only already.
    if (rules.mode === 'none' && !(await this.#recorded(key))) return;
    const a = await this.attachment(key);
    const hostHas = existsSync(`/sys/class/net/${a.ifname}`);
    if (rules.mode === 'none') {
      if (hostHas) await exec('ip', ['link', 'del', a.ifname], { allowFailure: true });
      await this.#delRule(a);
      this.#o.services.policy.drop(key);
      // A restore of images taken with egress into a sandbox now without: CRIU made the pair with the host end above.
      await exec('nsenter', [`--net=${netns}`, 'ip', 'link', 'del', SANDBOX_IF], { allowFailure: true });
      await this.#nftDetach(a);
      return;
    }
    // The table is (re)made with every change, in the same transaction: a table someone removed (a host
    // firewall's reload runs `flush ruleset`) comes back with the next change. Rules before the link.
    await this.#nftAttach(key, a, rules);
    this.#tableReady = true;
    if (!hostHas) await exec('ip', ['link', 'add', a.ifname, 'type', 'veth', 'peer', 'name', SANDBOX_IF, 'netns', netns]);
    const inside = [`addr replace ${SANDBOX_IP}/${SANDBOX_PREFIX} dev ${SANDBOX_IF}`, `link set ${SANDBOX_IF} up`, `route replace default via ${GATEWAY_IP} dev ${SANDBOX_IF}`];
    await exec('nsenter', [`--net=${netns}`, 'ip', '-batch', '-'], { input: inside.join('\n') + '\n' });
    // No IPv6 on the host end (the sandbox gets none either); forwarding from this link only. Fail closed
    // without forkd's table: a packet whose source the table did not rewrite (still SANDBOX_IP) is
    // blackholed by the link's own routing rule (after the local table's, so ARP for the gateway still
    // resolves). Not strict reverse-path filtering: ARP from SANDBOX_IP would fail it.
    await writeFile(`/proc/sys/net/ipv6/conf/${a.ifname}/disable_ipv6`, '1').catch(() => {});
    await writeFile(`/proc/sys/net/ipv4/conf/${a.ifname}/forwarding`, '1');
    await this.#delRule(a);
    const host = [`rule add iif ${a.ifname} from ${SANDBOX_IP} blackhole`, `addr replace ${GATEWAY_IP}/32 dev ${a.ifname}`, `link set ${a.ifname} up`, `route replace ${a.hostIp}/32 via ${SANDBOX_IP} dev ${a.ifname} onlink`];
    await exec('ip', ['-batch', '-'], { input: host.join('\n') + '\n' });
    await shapeDownload(a.ifname, rules.bandwidthMbps);
  }

  #script(a: Attachment, rules: NetworkRules, ports: EgressPorts): string {
    const t = this.#o.table;
    return tableScript(t, ports, this.#o.services.operatorAllow, this.#o.services.routedUplink) + limitsTableScript(t) + attachScript(t, a, rules) + limitsAttachScript(t, a, rules);
  }

  /** The link's fail-closed routing rule (see apply); every copy of it, none is fine. */
  async #delRule(a: Attachment): Promise<void> {
    for (let i = 0; i < 8; i++) {
      if ((await exec('ip', ['rule', 'del', 'iif', a.ifname, 'from', SANDBOX_IP, 'blackhole'], { allowFailure: true })).code !== 0) return;
    }
  }

  /** Rules of an attached instance only (a runtime change): the next connection follows them. */
  async setRules(key: string, rules: NetworkRules): Promise<void> {
    const a = await this.attachment(key);
    await this.#nftAttach(key, a, rules);
    if (existsSync(`/sys/class/net/${a.ifname}`)) await shapeDownload(a.ifname, rules.bandwidthMbps);
  }

  /** The table, the instance's rules and limits (one transaction), and its entry in the resolver's and proxy's policy. */
  async #nftAttach(key: string, a: Attachment, rules: NetworkRules): Promise<void> {
    const ports = await this.#o.services.start();
    await exec('nft', ['-f', '-'], { input: this.#script(a, rules, ports) });
    const sb = this.#o.services.policy.set(key, a, rules);
    // A denied name's addresses are denied by address too. Only the rules' literal names: a `*.` rule's names are
    // never asked upstream (a sandbox's query for one is answered NXDOMAIN unasked, see dns-policy.ts).
    const resolver = this.#o.services.resolver;
    const names = [...sb.rules.forcedNames, ...sb.rules.denyNames].filter((n) => !n.startsWith('*.')).slice(0, 64);
    if (!resolver || names.length === 0) return;
    const learn = Promise.all(names.map(async (n) => this.#o.services.policy.learn(sb, n, (await resolver.lookup(n))?.a ?? [])));
    await Promise.race([learn, new Promise((r) => setTimeout(r, DENIED_LOOKUP_MS).unref())]);
  }

  async #nftDetach(a: Attachment): Promise<void> {
    if (!this.#tableReady && (await exec('nft', ['list', 'table', 'inet', this.#o.table], { allowFailure: true })).code !== 0) return;
    await exec('nft', ['-f', '-'], { input: detachScript(this.#o.table, a) + limitsDetachScript(this.#o.table, a) });
  }

  async dropTable(): Promise<void> {
    await exec('nft', ['delete', 'table', 'inet', this.#o.table], { allowFailure: true });
    this.#tableReady = false;
  }

  /** The instance's veth, rules and records. Idempotent. */
  async release(key: string): Promise<void> {
    const a = await this.#recorded(key);
    this.#o.services.policy.drop(key);
    if (a) {
      await exec('ip', ['link', 'del', a.ifname], { allowFailure: true });
      await this.#delRule(a);
      await this.#nftDetach(a);
    }
    this.#known.delete(key);
    await rm(this.#file(key), { force: true });
  }
}
