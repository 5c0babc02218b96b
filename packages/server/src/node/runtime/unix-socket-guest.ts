import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError } from '@forkd/protocol';
import { span } from '../../shared/profile.js';
import { GuestClient } from '../guest/guest-client.js';
import { unixDialer } from '../guest/guest-connection.js';
import { rootfsOps, type RootfsOp } from '../storage/rootfs-ops.js';
import { DEV_LINKS, DEV_MOUNT_POINTS } from './oci-spec.js';
import type { GuestTransport, GuestTransportDeps } from './guest-transport.js';
import type { RuntimeStatus } from './runtime.js';
import { rootDirectory } from './sandbox-root.js';

/** Where the guest agent lives inside every sandbox root. */
export const GUEST_DIR = '.forkd';
export const AGENT_SOCKET = 'agent.sock';
/** The container's init: the agent this transport installs (a path inside the root). */
export const GUEST_INIT = `/${GUEST_DIR}/init`;
/** A start or restore on a loaded host (a Btrfs cleaner busy, both cores taken) can take seconds. */
const READY_TIMEOUT_MS = 30_000;

/**
 * The container runtime's guest transport: the agent is installed into the
 * root's host directory (through forkd-rootfs-ops) and listens on a Unix
 * socket in `/.forkd` there, which is sealed before anything connects.
 */
export class UnixSocketGuest implements GuestTransport {
  readonly #d: GuestTransportDeps;
  readonly #guests = new Map<string, GuestClient>();

  constructor(deps: GuestTransportDeps) {
    this.#d = deps;
  }

  at(key: string): GuestClient {
    let g = this.#guests.get(key);
    if (!g) {
      const root = this.#dir(key);
      g = new GuestClient(unixDialer(join(root, GUEST_DIR, AGENT_SOCKET)), { verify: () => rootfsOps(root, [['check-agent', GUEST_DIR, AGENT_SOCKET]]).then(() => {}), deadlineMs: this.#d.deadlineMs });
      this.#guests.set(key, g);
    }
    return g;
  }

  /** Host directory of an instance's root. */
  #dir(key: string): string {
    return rootDirectory(this.#d.root(key));
  }

  drop(key: string): void {
    this.#guests.get(key)?.detachAll();
    this.#guests.delete(key);
  }

  openConnections(key: string): number {
    return this.#guests.get(key)?.openConnections ?? 0;
  }

  /**
   * The host reaches the agent through `/.forkd` in the sandbox's root, which
   * the sandbox's root user (or a template's author) could otherwise fill
   * with a symlink to a host path. Once the agent listens, the directory is
   * sealed (immutable; see GuestClient#connect for why that pins the path);
   * it is unsealed only while forkd itself writes there (installing the
   * agent, CRIU re-binding the socket at a restore). Every step goes through
   * forkd-rootfs-ops (openat2, no symlinks followed): with `install` the
   * directory is replaced by a fresh one holding today's agent, whatever the
   * template left there.
   *
   * `/dev` is the root's own directory, or hidden under a tmpfs (see
   * oci-spec.ts devMounts); either way runc resolves paths through it (a
   * restore names its masks' source by joining `/dev/null` to the root, a
   * start makes device nodes there). A cold start (`install`) empties it, as
   * a fresh tmpfs would be, so a template that shaped it changes nothing, and
   * gives it runc's symlinks (DEV_LINKS); a restore keeps what the sandbox
   * had there and only makes the mount points true files and directories
   * (DEV_MOUNT_POINTS). Same process.
   */
  async prepareRoot(key: string, opts: { install: boolean }): Promise<void> {
    this.at(key).unsealing();
    const ops: RootfsOp[] = [
      ...(opts.install
        ? ([['rmtree', 'dev'], ['mkdir', 'dev', 0o755], ...DEV_LINKS.map(([target, p]) => ['symlink', target, p])] as RootfsOp[])
        : DEV_MOUNT_POINTS.map(([p, kind]): RootfsOp => ['mountpoint', p, kind])),
      // Mount points runc would otherwise make itself at a restore, through an idmapped root where host root
      // owns nothing (EOVERFLOW): sysfs hides them, so whatever a template put there goes.
      ['rmtree', 'sys'],
      ['mkdir', 'sys/firmware', 0o755],
      ['mkdir', 'sys/fs/cgroup', 0o755],
      ...(opts.install
        ? ([
            ['rmtree', GUEST_DIR],
            ['mkdir', GUEST_DIR, 0o700],
            ['install', this.#d.guestBinary, `${GUEST_DIR}/init`, 0o755],
          ] as RootfsOp[])
        : ([['unseal', GUEST_DIR]] as RootfsOp[])),
    ];
    await rootfsOps(this.#dir(key), ops);
  }

  /**
   * Seals the agent's directory of an instance, then waits for the agent to
   * answer: nothing connects before the seal (see GuestClient#connect).
   * Until its socket exists the seal waits on inotify (inside
   * forkd-rootfs-ops); once it exists a connect can still be refused for a
   * moment (between the agent's bind and listen), so that is retried with
   * sleeps growing to 20 ms. A directory found tampered with fails the start
   * (FAILED_PRECONDITION) without any connect. Whether the
   * instance died meanwhile is asked of runc (a process per call) at most
   * every 250 ms.
   */
  async waitAgent(key: string, status: () => Promise<RuntimeStatus>): Promise<void> {
    const guest = this.at(key);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let checked = Date.now();
    let sealed = false;
    for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
      try {
        if (!sealed) {
          // Blocks (inotify) until the agent's socket exists, at most 250 ms a round.
          await rootfsOps(this.#dir(key), [['seal-agent', GUEST_DIR, AGENT_SOCKET, Math.max(1, Math.min(deadline - Date.now(), 250))]]);
          sealed = true;
          guest.sealed();
        }
        // After a lazy restore the agent's first answers wait for its pages (the lazy-pages daemon).
        await span('agent: first answers', async () => {
          await guest.info(Math.max(1, Math.min(deadline - Date.now(), this.#d.deadlineMs)));
          // Restored from a dump, the agent is dumpable (see GuestClient.setDumpable); an older one does not know the request.
          await guest.setDumpable(false).catch(() => {});
        });
        return;
      } catch (err) {
        // Tampered with: fail now, and never connect.
        if (!sealed && err instanceof ForkdError && err.code === 'FAILED_PRECONDITION') {
          guest.sealFailed(err);
          throw err;
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          const e = new ForkdError('TIMEOUT', `guest agent of ${key} did not become ready`, undefined, { cause: err });
          if (!sealed) guest.sealFailed(e);
          throw e;
        }
        if (sealed) await sleep(Math.min(delay, left));
        if (Date.now() - checked >= 250) {
          checked = Date.now();
          const st = await status();
          if (st === 'stopped' || st === 'missing') {
            const e = new ForkdError('INTERNAL', `sandbox ${key} exited during start`);
            if (!sealed) guest.sealFailed(e);
            throw e;
          }
        }
      }
    }
  }
}
