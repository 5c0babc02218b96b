import { mkdir, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Duplex } from 'node:stream';
import { exec } from '../../shared/exec.js';
import { REPO_ROOT } from '../../shared/config.js';
import type { NetworkRules } from '@forkd/protocol';
import type { Network, PortConnection, VethEnds } from './network.js';
import { Egress, SANDBOX_IF, type EgressOptions } from './egress.js';
import { EgressServices, type EgressServicesOptions } from './egress-services.js';
import { NetnsHolder } from './netns-holder.js';
import { NetnsDialer, type Dialer } from './netns-dialer.js';

/** A node's egress settings (see ForkdConfig.net): table, names, addresses, and its resolver's and proxy's. */
export type NetnsEgressOptions = Partial<Omit<EgressOptions, 'dir' | 'services'>> & Partial<Omit<EgressServicesOptions, 'table'>>;

export const NETNS_ADOPT = join(REPO_ROOT, 'packages/host-tools/build/forkd-netns-adopt');

const NSFS_MAGIC = 0x6e736673;

/**
 * One persistent network namespace per sandbox, bind-mounted at
 * `<dir>/<id>` in the holder's mount namespace (see NetnsHolder; `path`
 * reaches it from the host), with loopback up; an `egress` sandbox's also
 * has the sandbox end of a veth pair (see Egress).
 */
export class NetnsNetwork implements Network {
  readonly #dir: string;
  readonly #egress: Egress;
  readonly #holder: NetnsHolder;
  readonly #dialer: Dialer;
  readonly services: EgressServices;

  constructor(dir: string, egress: NetnsEgressOptions = {}, dialer: Dialer = new NetnsDialer()) {
    this.#dir = dir;
    this.#dialer = dialer;
    this.#holder = new NetnsHolder(dir);
    const table = egress.table ?? 'forkd';
    this.services = new EgressServices({ table, ports: egress.ports ?? { dns: 0, http: 0, tls: 0 }, upstream: egress.upstream, interceptor: egress.interceptor, extraCaFile: egress.extraCaFile, operatorAllow: egress.operatorAllow, servicePorts: egress.servicePorts, routedUplink: egress.routedUplink, ...(egress.onDecision ? { onDecision: egress.onDecision } : {}) });
    this.#egress = new Egress({ dir: join(dir, '.egress'), table, ifPrefix: egress.ifPrefix ?? 'fkv', hostNet: egress.hostNet ?? '10.254', services: this.services });
  }

  /** Stops the resolver, the proxy and the dialer (the node's close). */
  close(): Promise<void> {
    this.#dialer.close();
    return this.services.close();
  }

  /** Where the sandbox's namespace is reached from the host (through the holder). */
  path(id: string): string {
    return this.#holder.path(id);
  }

  async prepare(id: string, rules?: NetworkRules): Promise<string> {
    await this.#holder.ensure();
    // After a host reboot the file is still there but no longer a namespace.
    if (!(await isNamespace(this.path(id)))) {
      await mkdir(this.#dir, { recursive: true });
      await writeFile(join(this.#dir, id), '');
      await this.#holder.run('unshare', [`--net=${join(resolve(this.#dir), id)}`, 'ip', 'link', 'set', 'lo', 'up']);
    }
    const p = this.path(id);
    if (rules) await this.#egress.apply(id, p, rules);
    return p;
  }

  async adopt(id: string, pid: number, rules?: NetworkRules): Promise<string> {
    const mountNs = await this.#holder.mountNs();
    await mkdir(this.#dir, { recursive: true });
    await writeFile(join(this.#dir, id), '');
    // One process: into the holder's namespace, let go of what was held there (a rewind's), hold, loopback up.
    await exec(NETNS_ADOPT, ['--mount-ns', mountNs, '--replace', String(pid), join(resolve(this.#dir), id), '--lo-up']);
    const p = this.path(id);
    if (rules) await this.#egress.apply(id, p, rules);
    return p;
  }

  held(id: string): Promise<boolean> {
    return isNamespace(this.path(id));
  }

  readonly sandboxLink = SANDBOX_IF;

  restoredVeth(id: string): Promise<VethEnds> {
    return this.#egress.restoredVeth(id);
  }

  async setRules(id: string, rules: NetworkRules): Promise<void> {
    await this.#egress.apply(id, this.path(id), rules);
  }

  /** Removes forkd's nftables table (a test node's, at its end; a daemon keeps its own). */
  dropTable(): Promise<void> {
    return this.#egress.dropTable();
  }

  async release(id: string): Promise<void> {
    await this.#egress.release(id);
    const host = join(this.#dir, id);
    if (await isNamespace(this.path(id))) await exec(NETNS_ADOPT, ['--mount-ns', await this.#holder.mountNs(), '--release', resolve(host)], { allowFailure: true });
    // One a daemon before the holder made in the host's namespace.
    if (await isNamespace(host)) await exec(NETNS_ADOPT, ['--release', host], { allowFailure: true });
    await rm(host, { force: true });
  }

  /** Ends the holder of the namespaces (a test node's end, a simulated reboot; a daemon keeps its own). */
  endHolder(): Promise<void> {
    return this.#holder.end();
  }

  /** A socket connected in the sandbox's namespace by the resident dialer (no process per connection). */
  async connect(id: string, port: number): Promise<PortConnection> {
    const r = await this.#dialer.dial(this.path(id), port);
    if (!('socket' in r)) return endedConnection('refused' in r ? { refused: true } : { refused: false, error: r.error });
    const s = r.socket;
    // Requests and replies are small writes each (the head, then the body): none waits for the other's ack.
    s.setNoDelay(true);
    let error: string | undefined;
    s.on('error', (err) => (error = err.message));
    const done = new Promise<{ refused: boolean; error?: string }>((resolve) => s.once('close', () => resolve({ refused: false, ...(error ? { error } : {}) })));
    return { stream: s, done, close: () => s.destroy() };
  }

  async list(): Promise<string[]> {
    return (await readdir(this.#dir).catch(() => [])).filter((n) => /^[a-z0-9][a-z0-9.-]*$/.test(n));
  }
}

/** A connection that never was: its stream ends at once (what a relay that could not connect looked like). */
function endedConnection(result: { refused: boolean; error?: string }): PortConnection {
  const stream = new Duplex({ read() {}, write: (_c, _e, cb) => cb() });
  stream.push(null);
  return { stream, done: Promise.resolve(result), close: () => stream.destroy() };
}

async function isNamespace(p: string): Promise<boolean> {
  return (await statfs(p).catch(() => undefined))?.type === NSFS_MAGIC;
}
