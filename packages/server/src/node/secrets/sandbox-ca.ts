import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { ForkdError, SANDBOX_ID_SOURCE } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { privateDir } from '../../shared/private-state.js';
import type { TlsContexts } from './credential-interceptor.js';

const SANDBOX_ID = new RegExp(`^${SANDBOX_ID_SOURCE}$`);
/** Keys are owner-only whatever the daemon's umask (a test, an embedding). */
const PRIVATE = { umask: 0o077 };
const MAX_LEAVES = 1024;
const DNS_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * One certificate authority per sandbox, made on the host with openssl: its
 * key (and the leaf key) in a root-only directory under the node's state
 * dir, never in the sandbox; only the certificate goes into the sandbox's
 * trust store. Leaf certificates (one per host name) are made on first use
 * and kept in memory. A fork gets a CA of its own at its first grant (it
 * keeps trusting its parent's certificate, whose key never leaves the host
 * and signs only the parent's connections).
 */
export class SandboxCas implements TlsContexts {
  readonly #dir: string;
  readonly #leaves = new Map<string, Promise<SecureContext>>();
  readonly #cas = new Map<string, Promise<string>>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  #home(sandboxId: string): string {
    if (!SANDBOX_ID.test(sandboxId)) throw new ForkdError('INVALID_ARGUMENT', `invalid sandbox id ${sandboxId}`);
    return join(this.#dir, sandboxId);
  }

  /** The sandbox's CA certificate (PEM), made on first call. */
  certificate(sandboxId: string): Promise<string> {
    let p = this.#cas.get(sandboxId);
    if (!p) {
      p = this.#make(sandboxId);
      this.#cas.set(sandboxId, p);
      p.catch(() => this.#cas.delete(sandboxId));
    }
    return p;
  }

  async #make(sandboxId: string): Promise<string> {
    const home = this.#home(sandboxId);
    const crt = join(home, 'ca.crt');
    if (existsSync(crt) && existsSync(join(home, 'leaf.key'))) return readFile(crt, 'utf8');
    await privateDir(this.#dir);
    await privateDir(home);
    const key = join(home, 'ca.key');
    await exec('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', crt, '-days', '3650', '-subj', `/O=forkd/CN=forkd sandbox ${sandboxId} CA`,
      '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], PRIVATE);
    await exec('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', join(home, 'leaf.key')], PRIVATE);
    return readFile(crt, 'utf8');
  }

  /** Whether the CA certificate was put in the sandbox's trust store (a marker on the host, so a restart does not wake a paused sandbox to check). */
  installed(sandboxId: string): boolean {
    return existsSync(join(this.#home(sandboxId), 'installed'));
  }

  /** The sandbox's disk went back to before the certificate was put in (a rewind): install again at the next chance. */
  async clearInstalled(sandboxId: string): Promise<void> {
    await rm(join(this.#home(sandboxId), 'installed'), { force: true });
  }

  async markInstalled(sandboxId: string): Promise<void> {
    await writeFile(join(this.#home(sandboxId), 'installed'), '', { mode: 0o600 });
  }

  context(sandboxId: string, host: string): Promise<SecureContext> {
    const k = `${sandboxId}\0${host}`;
    let p = this.#leaves.get(k);
    if (p) {
      // Most recently used last: the oldest goes first when the cache is full.
      this.#leaves.delete(k);
      this.#leaves.set(k, p);
    } else {
      // A wildcard grant lets a sandbox name any number of hosts: the cache is bounded, not the names.
      if (this.#leaves.size >= MAX_LEAVES) this.#leaves.delete(this.#leaves.keys().next().value!);
      p = this.#leaf(sandboxId, host);
      this.#leaves.set(k, p);
      p.catch(() => this.#leaves.delete(k));
    }
    return p;
  }

  async #leaf(sandboxId: string, host: string): Promise<SecureContext> {
    const h = host.toLowerCase();
    const ip = isIP(h) !== 0;
    // The name goes into an openssl extension string: only a plain DNS name or an IP address gets there.
    if (!ip && !DNS_NAME.test(h)) throw new ForkdError('INVALID_ARGUMENT', `no certificate for host name ${JSON.stringify(host.slice(0, 100))}`);
    const ca = await this.certificate(sandboxId);
    const home = this.#home(sandboxId);
    const r = await exec('openssl', ['req', '-x509', '-new', '-key', join(home, 'leaf.key'), '-CA', join(home, 'ca.crt'), '-CAkey', join(home, 'ca.key'), '-subj', `/CN=${h}`, '-days', '30',
      '-addext', `subjectAltName=${ip ? 'IP' : 'DNS'}:${h}`, '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'extendedKeyUsage=serverAuth', '-addext', 'keyUsage=critical,digitalSignature'], PRIVATE);
    return createSecureContext({ key: await readFile(join(home, 'leaf.key')), cert: r.stdout + ca });
  }

  /** The sandbox is gone: its CA key and leaves go too. */
  async remove(sandboxId: string): Promise<void> {
    this.#cas.delete(sandboxId);
    for (const k of this.#leaves.keys()) if (k.startsWith(`${sandboxId}\0`)) this.#leaves.delete(k);
    await rm(this.#home(sandboxId), { recursive: true, force: true });
  }
}
