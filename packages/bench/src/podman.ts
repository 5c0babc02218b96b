import { mkdir, rm, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { exec } from '@forkd/server';

/**
 * Podman (Debian's package, runc as runtime) driven like a self-hosting user
 * would, for side-by-side numbers. Its CRIU is forkd's private ≥ 4.2 build,
 * first on its PATH (runc finds criu there); the host's libc is untouched.
 */
export class Podman {
  readonly image = 'localhost/forkd-base:bench';
  readonly #env: NodeJS.ProcessEnv;
  /**
   * Flags of every container: loopback only, like a forkd sandbox; and lower
   * rlimits, since these hosts lack CAP_SYS_RESOURCE and podman's defaults
   * (raised to the maximum for root) fail.
   */
  static readonly RUN_FLAGS = ['--network', 'none', '--ulimit', 'nofile=1024:4096', '--ulimit', 'nproc=4096:4096'];

  constructor(criuDir: string) {
    this.#env = { ...process.env, PATH: `${criuDir}:${process.env.PATH ?? ''}` };
  }

  /** Puts forkd's criu wrapper first on podman's PATH. */
  static async withCriu(criu: string, dir: string): Promise<Podman> {
    await mkdir(dir, { recursive: true });
    await rm(join(dir, 'criu'), { force: true });
    await symlink(criu, join(dir, 'criu'));
    return new Podman(dir);
  }

  async run(args: string[], timeoutMs = 600_000): Promise<string> {
    return (await exec('podman', args, { env: this.#env, timeoutMs })).stdout.trim();
  }

  /** The same base root filesystem forkd's `base` template is made of. */
  async importRootfs(dir: string): Promise<void> {
    const have = await exec('podman', ['image', 'exists', this.image], { env: this.#env, allowFailure: true });
    if (have.code === 0) return;
    await exec('bash', ['-c', 'tar -C "$0" -c . | podman import -q - "$1"', dir, this.image], { env: this.#env, timeoutMs: 600_000 });
  }

  /** `podman run -d`: the container's PID 1 is `cmd`. */
  start(name: string, cmd: string[]): Promise<string> {
    return this.run(['run', '-d', '--name', name, ...Podman.RUN_FLAGS, this.image, ...cmd]);
  }

  async remove(names: string[]): Promise<void> {
    if (names.length) await exec('podman', ['rm', '-f', '-t', '0', ...names], { env: this.#env, allowFailure: true, timeoutMs: 600_000 });
  }

  /** Checkpoint (CRIU through runc); CRIU's own statistics say how long the tree was frozen. */
  async checkpoint(name: string, opts: { leaveRunning: boolean; exportTo?: string }): Promise<{ frozenMs: number; bytes: number }> {
    const args = ['container', 'checkpoint', '--print-stats', ...(opts.leaveRunning ? ['--leave-running'] : []), ...(opts.exportTo ? ['-e', opts.exportTo, '--compress', 'none'] : []), name];
    const out = await this.run(args);
    const stats = JSON.parse(out.slice(out.indexOf('{'))) as { container_statistics?: Array<{ criu_statistics?: { frozen_time?: number } }> };
    const frozen = stats.container_statistics?.[0]?.criu_statistics?.frozen_time ?? Number.NaN;
    const bytes = opts.exportTo ? (await stat(opts.exportTo)).size : Number.NaN;
    return { frozenMs: frozen / 1000, bytes };
  }

  restore(name: string): Promise<string> {
    return this.run(['container', 'restore', name]);
  }

  /** A new container from an exported checkpoint: Podman's fork. */
  restoreAs(archive: string, name: string): Promise<string> {
    return this.run(['container', 'restore', '--import', archive, '--name', name]);
  }

  /** Bytes of the checkpoint Podman keeps for a stopped, checkpointed container. */
  async checkpointBytes(name: string): Promise<number> {
    const id = await this.run(['inspect', '-f', '{{.Id}}', name]);
    const dir = `/var/lib/containers/storage/overlay-containers/${id}/userdata/checkpoint`;
    const r = await exec('du', ['-sb', dir], { allowFailure: true });
    return Number(r.stdout.split('\t')[0]) || 0;
  }

  version(): Promise<string> {
    return this.run(['--version']);
  }
}
