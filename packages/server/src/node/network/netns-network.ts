import { mkdir, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exec, spawnStream } from '../../shared/exec.js';
import { REPO_ROOT } from '../../shared/config.js';
import type { NetworkRules } from '@forkd/protocol';
import type { Network, PortConnection, VethEnds } from './network.js';
import { Egress, SANDBOX_IF, type EgressOptions } from './egress.js';
import { EgressServices, type EgressServicesOptions } from './egress-services.js';

/** A node's egress settings (see ForkdConfig.net): table, names, addresses, and its resolver's and proxy's. */
export type NetnsEgressOptions = Partial<Omit<EgressOptions, 'dir' | 'services'>> & Partial<Omit<EgressServicesOptions, 'table'>>;

const NETNS_CONNECT = join(REPO_ROOT, 'packages/host-tools/build/forkd-netns-connect');
const NETNS_ADOPT = join(REPO_ROOT, 'packages/host-tools/build/forkd-netns-adopt');

const NSFS_MAGIC = 0x6e736673;

/**
 * One persistent network namespace per sandbox, bind-mounted at
 * `<dir>/<id>`, with loopback up; an `egress` sandbox's also has the
 * sandbox end of a veth pair (see Egress).
 */
export class NetnsNetwork implements Network {
  readonly #dir: string;
  readonly #egress: Egress;
  readonly services: EgressServices;

  constructor(dir: string, egress: NetnsEgressOptions = {}) {
    this.#dir = dir;
    const table = egress.table ?? 'forkd';
    this.services = new EgressServices({ table, ports: egress.ports ?? { dns: 0, http: 0, tls: 0 }, upstream: egress.upstream, interceptor: egress.interceptor, extraCaFile: egress.extraCaFile, operatorAllow: egress.operatorAllow, servicePorts: egress.servicePorts, ...(egress.onDecision ? { onDecision: egress.onDecision } : {}) });
    this.#egress = new Egress({ dir: join(dir, '.egress'), table, ifPrefix: egress.ifPrefix ?? 'fkv', hostNet: egress.hostNet ?? '10.254', services: this.services });
  }

  /** Stops the resolver and proxy (the node's close). */
  close(): Promise<void> {
    return this.services.close();
  }

  path(id: string): string {
    return join(this.#dir, id);
  }

  async prepare(id: string, rules?: NetworkRules): Promise<string> {
    const p = this.path(id);
    // After a host reboot the file is still there but no longer a namespace.
    if (!(await isNamespace(p))) {
      await mkdir(this.#dir, { recursive: true });
      await writeFile(p, '');
      await exec('unshare', [`--net=${p}`, 'ip', 'link', 'set', 'lo', 'up']);
    }
    if (rules) await this.#egress.apply(id, p, rules);
    return p;
  }

  async adopt(id: string, pid: number, rules?: NetworkRules): Promise<string> {
    const p = this.path(id);
    if (await isNamespace(p)) await exec('umount', [p], { allowFailure: true });
    await mkdir(this.#dir, { recursive: true });
    await writeFile(p, '');
    await exec(NETNS_ADOPT, [String(pid), p, '--lo-up']);
    if (rules) await this.#egress.apply(id, p, rules);
    return p;
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
    const p = this.path(id);
    if (await isNamespace(p)) await exec('umount', [p], { allowFailure: true });
    await rm(p, { force: true });
  }

  /** One relay process per connection: it enters the namespace, connects, and pipes bytes. */
  connect(id: string, port: number): PortConnection {
    const h = spawnStream(NETNS_CONNECT, [this.path(id), String(port)]);
    const done = h.exit.then(({ code, stderr }) => ({ refused: code === 2, ...(code !== 0 ? { error: stderr.trim() || `exit ${code}` } : {}) }));
    return { stream: h.stream, done, close: h.kill };
  }

  async list(): Promise<string[]> {
    return (await readdir(this.#dir).catch(() => [])).filter((n) => /^[a-z0-9][a-z0-9.-]*$/.test(n));
  }
}

async function isNamespace(p: string): Promise<boolean> {
  return (await statfs(p).catch(() => undefined))?.type === NSFS_MAGIC;
}
