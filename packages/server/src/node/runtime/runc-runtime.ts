import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ForkdError, LOOPBACK_ONLY, type Limits, type NetworkRules } from '@forkd/protocol';
import { crashPoint } from '../../shared/crash-point.js';
import { exec, type ExecResult } from '../../shared/exec.js';
import { span } from '../../shared/profile.js';
import { watchCgroupEmpty } from '../cgroups/cgroup-exit-watch.js';
import { prepareCgroupParent } from '../cgroups/cgroup-parent.js';
import { favorDynmods } from '../cgroups/favor-dynmods.js';
import { makeCgroupV1Dirs } from '../cgroups/v1-layout.js';
import { childCgroups, killCgroup, readUsage, removeCgroup, swapAccounting, thawCgroup } from '../cgroups/cgroups.js';
import { restoreVethEnv } from './criu-veth.js';
import { prepareCriuHost } from './criu-host.js';
import type { Logger } from '../../shared/logger.js';
import { buildOciSpec, cpuQuota, CPU_PERIOD_US } from './oci-spec.js';
import { criuError, runcCheckpoint, runcFreeze } from './runc-checkpoint.js';
import { directDump } from './runc-direct-dump.js';
import { LAZY_PAGES_START_MS, startLazyDaemons, type LazyDaemons } from './runc-daemons.js';
import { LazyPagesWaits, PAGES_LOST } from './lazy-pages-waits.js';
import { firstExit } from './exit-watch.js';
import { killContainer } from './runc-kill.js';
import { carriesOwnNetns, dumpedWithDevInRoot, IDMAP_FILE, LAYOUT_FILE, ownImages, pagesBytes, readIdmap, runcImages } from './runc-images.js';
import type { GuestTransport, GuestTransportDeps } from './guest-transport.js';
import { RootMounts, type RootView } from './root-mounts.js';
import { GUEST_INIT, UnixSocketGuest } from './unix-socket-guest.js';
import { readHostLimits, sandboxRlimits } from './rlimits.js';
import { withRuncDefaults, type RuncOptions } from './runc-options.js';
import type { CheckpointOptions, CheckpointStats, ExitWatch, ResourceUsage, RestoreOptions, Runtime, RuntimeSpec, RuntimeState, RuntimeStatus } from './runtime.js';

/** sizeof(sockaddr_un.sun_path), with room for its NUL. */
const UNIX_PATH_MAX = 108;

/** Runtime backed by runc: one OCI container per sandbox, the guest agent as its init. */
export class RuncRuntime implements Runtime {
  /** runc takes a host directory as the container's root. */
  readonly rootKind = 'directory';
  readonly images = runcImages;
  readonly #o: Required<RuncOptions>;
  readonly #mounts: RootMounts;
  readonly #swap = swapAccounting();

  constructor(opts: RuncOptions) {
    this.#o = withRuncDefaults(opts);
    this.#mounts = new RootMounts(opts.mountRoot, opts.idmapTool);
    // runc ≥ 1.2 ignores --criu and runs the `criu` on its PATH: forkd's own comes first.
    this.#uffdBroker = [this.#o.uffdPreload, this.#o.uffdBroker, '/dev/userfaultfd'].every((p) => p !== '' && existsSync(p));
    const { FORKD_CRIU_DUMP_LOG_LEVEL: _, ...inherited } = process.env;
    const level = this.#o.criuDumpLogLevel;
    // The wrapper reads the level (see host-tools/src/criu-version/relay.c); our own option, not an inherited variable, decides it.
    this.#env = { ...inherited, ...(level >= 0 && { FORKD_CRIU_DUMP_LOG_LEVEL: String(level) }), PATH: `${dirname(this.#o.criu)}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
  }

  readonly #env: NodeJS.ProcessEnv;
  /**
   * A lazy restore has the restored tasks open a userfaultfd, which inside a
   * user namespace the kernel allows only with vm.unprivileged_userfaultfd=1.
   * forkd does not set it (it would let every host user open one, a known
   * exploit primitive): the broker preloaded into criu hands those tasks
   * /dev/userfaultfd instead. With neither, such sandboxes restore eagerly.
   */
  readonly #uffdInUserns = (() => {
    try {
      return readFileSync('/proc/sys/vm/unprivileged_userfaultfd', 'utf8').trim() === '1';
    } catch {
      return false;
    }
  })();

  readonly #uffdBroker: boolean;

  /** Where the broker listens for one restore, or undefined when that restore must be eager (see #uffdBroker). */
  #brokerSocket(id: string, imagesDir: string): string | undefined {
    // In the images directory: the restoring tasks reach it through CRIU's descriptor of that directory, the
    // broker binds it through its own (`/proc/self/fd/<n>/<name>.tmp`): only the name's length is bounded.
    const name = `.uffd-${id}.sock`;
    return this.#uffdBroker && Buffer.byteLength(`/proc/self/fd/99999/${name}.tmp`) < UNIX_PATH_MAX ? join(imagesDir, name) : undefined;
  }

  /** Read once: the daemon's hard limits do not change while it runs. */
  readonly #rlimits = sandboxRlimits(readHostLimits());
  // A tree whose pages daemon failed runs on zeroed memory: its tasks go (see LazyPagesWaits).
  readonly #lazyPages = new LazyPagesWaits((id) => killCgroup(this.cgroupPath(id)));

  async prepareHost(log: Pick<Logger, 'info' | 'warn'>): Promise<void> {
    await prepareCriuHost(this.#o, log);
    await prepareCgroupParent(this.#o.cgroupParent, log);
    const dynmods = await favorDynmods({ leave: !this.#o.favorDynmods });
    if (dynmods.outcome === 'enabled') log.info('cgroup2 remounted with favordynmods: moving a process into a cgroup no longer waits for an RCU grace period (FORKD_CGROUP_FAVORDYNMODS=leave keeps the host\'s setting)', { path: dynmods.path });
    if (dynmods.outcome === 'failed') log.warn('could not turn on favordynmods: each sandbox start and restore waits for an RCU grace period', { path: dynmods.path, detail: dynmods.detail });
  }

  /** The agent is the container's init and listens on a Unix socket in the root (see unix-socket-guest.ts). */
  guests(deps: GuestTransportDeps): GuestTransport {
    return new UnixSocketGuest(deps);
  }

  cgroupPath(id: string): string {
    return `/${this.#o.cgroupParent}/${id}`;
  }

  /**
   * Runs runc with forkd's state root and criu. With a log file, runc's errors
   * go there and no stdio of ours is passed: a detached container's init
   * inherits runc's stdio. With a root view, runc runs in the mount namespace
   * that view is made in (RootView.runIn).
   */
  #runc(args: string[], logFile?: string, env?: NodeJS.ProcessEnv, view?: RootView) {
    const base = ['--root', this.#o.stateRoot];
    if (logFile) base.push('--log', logFile, '--log-format', 'json');
    const [file, ...pre] = view?.runIn.length ? [...view.runIn, this.#o.runc] : [this.#o.runc];
    // 022: the cgroup directories runc makes must be readable by the sandbox's root (a user namespace's is not
    // host root): tools size themselves from their limits there. runc's own state is in a private directory.
    return exec(file!, [...pre, ...base, ...args], { allowFailure: true, env: env ? { ...this.#env, ...env } : this.#env, umask: 0o022, stdio: logFile ? ['ignore', 'ignore', 'ignore'] : ['ignore', 'pipe', 'pipe'] });
  }

  async #writeBundle(id: string, spec: RuntimeSpec, netns: string | undefined, restore?: { images: string | undefined; loopbackHook: boolean; devInRoot: boolean }): Promise<{ bundle: string; view: RootView }> {
    const bundle = join(this.#o.bundleRoot, id);
    await mkdir(bundle, { recursive: true, mode: 0o700 });
    await mkdir(this.#o.stateRoot, { recursive: true });
    // Beside the roots, not in the private bundles: CRIU opens it from inside a sandbox's user namespace.
    const shared = await this.#mounts.sharedDirs();
    const view = await this.#mounts.view(id, spec, restore?.images);
    // A restore names the v1 binds to CRIU whatever the lever says: images dumped with them need their mapping,
    // and images dumped with runc's tmpfs never use it (their cgroup mounts are real ones, in a cgroup namespace).
    const cgroupV1 = restore || this.#o.cgroupV1Binds ? shared.cgroupV1 : undefined;
    const loopbackHook = restore?.loopbackHook && this.#o.criuAction ? this.#o.criuAction : undefined;
    const devInRoot = (restore?.devInRoot ?? this.#o.devInRoot) && spec.idmap !== undefined;
    const config = buildOciSpec({ ...spec, rootfs: view.rootfs, init: GUEST_INIT }, { cgroupsPath: this.cgroupPath(id), swapLimit: this.#swap, netns, emptyDir: shared.emptyDir, rlimits: this.#rlimits, cgroupV1, devInRoot, loopbackHook });
    await writeFile(join(bundle, 'config.json'), JSON.stringify(config), { mode: 0o600 });
    // A new config, and soon a new init: runc's kept dump request is not theirs.
    await directDump(bundle, this.#o.criu, this.#env).forget();
    // Goes with every checkpoint's images, as the range does.
    await writeFile(join(bundle, LAYOUT_FILE), JSON.stringify({ devInRoot }));
    // The range goes with every checkpoint's images: a restore must recreate it (see checkpoint).
    if (spec.idmap) await writeFile(join(bundle, IDMAP_FILE), JSON.stringify(spec.idmap));
    else await rm(join(bundle, IDMAP_FILE), { force: true });
    return { bundle, view };
  }

  async #must(args: string[], what: string): Promise<void> {
    const r = await this.#runc(args);
    if (r.code !== 0) throw new ForkdError('INTERNAL', `runc ${what} failed: ${r.stderr.trim().slice(-300)}`, { cmd: `runc ${args.join(' ')}`, exitCode: r.code, stderrTail: r.stderr.slice(-4000) });
  }

  async thaw(id: string): Promise<void> {
    await thawCgroup(this.cgroupPath(id)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new ForkdError('NOT_FOUND', `sandbox ${id} has no cgroup to thaw`);
      throw err;
    });
  }

  /** See runcFreeze. */
  freeze(id: string): Promise<void> {
    const hookDir = join(this.#o.bundleRoot, id, 'freeze');
    return runcFreeze({ criuAction: this.#o.criuAction, cgroupPath: this.cgroupPath(id), hookDir, thaw: () => this.thaw(id) }, id);
  }

  /** See runcCheckpoint. */
  async checkpoint(id: string, o: CheckpointOptions): Promise<CheckpointStats> {
    await this.settleMemory(id);
    const dumpEnv = this.#o.criuDumpConfig ? { [this.#o.criuRelay ? 'FORKD_CRIU_DUMP_CONFIG' : 'CRIU_CONFIG_FILE']: this.#o.criuDumpConfig } : undefined;
    return runcCheckpoint(
      {
        runc: (args, env) => this.#runc(args, undefined, env ? { ...dumpEnv, ...env } : dumpEnv),
        direct: this.#o.criuRelay && this.#o.criuDirect && dumpEnv ? directDump(join(this.#o.bundleRoot, id), this.#o.criu, this.#env) : undefined,
        thaw: () => this.thaw(id),
        cgroupPath: this.cgroupPath(id),
        idmapFile: join(this.#o.bundleRoot, id, IDMAP_FILE),
        layoutFile: join(this.#o.bundleRoot, id, LAYOUT_FILE),
        criuAction: this.#o.criuAction,
        deadlineMs: this.#o.checkpointDeadlineMs,
      },
      id,
      o,
    );
  }

  settleMemory(id: string): Promise<void> {
    return this.#lazyPages.settled(id, join(this.#o.bundleRoot, id, 'criu'), this.#o.checkpointDeadlineMs);
  }

  restore(id: string, requested: RuntimeSpec, o: RestoreOptions): Promise<RuntimeState> {
    return this.#restore(id, requested, o, true);
  }

  /** `mayBeLazy` false: eagerly, a lazy try's daemon having never listened. */
  async #restore(id: string, requested: RuntimeSpec, o: RestoreOptions, mayBeLazy: boolean): Promise<RuntimeState> {
    // CRIU recreates the user namespace the images were dumped in: the root's view must use that range.
    const spec = { ...requested, idmap: await readIdmap(o.imagesDir) };
    // With a user namespace the network namespace is the sandbox's own, in its images (see Network.adopt).
    const ownNetns = spec.idmap !== undefined || (await carriesOwnNetns(o.imagesDir));
    // Owned by the range's root before CRIU opens them from inside it; meanwhile the rest is made ready.
    const owned = spec.idmap ? ownImages(o.imagesDir, spec.idmap.hostId) : undefined;
    owned?.catch(() => {}); // awaited below
    const workDir = join(this.#o.bundleRoot, id, 'criu');
    await mkdir(workDir, { recursive: true, mode: 0o700 });
    // Started before the bundle is written: they take ~7 ms to listen, the bundle and cgroups ~4 of them.
    const daemons = mayBeLazy ? await this.#lazyDaemons(id, spec.idmap?.hostId, o.imagesDir, workDir) : undefined;
    const [{ bundle, view, netEnv }] = await Promise.all([this.#restoreBundle(id, spec, ownNetns, o.imagesDir), owned]).catch(async (err: unknown) => {
      await daemons?.stop();
      throw err;
    });
    // With lazyConnectWait runc is not held until they listen: CRIU's connect waits. One that ended already never will: eager.
    const lazy = daemons !== undefined && (await (this.#o.lazyConnectWait ? Promise.race([daemons.listening, Promise.resolve(true)]) : span('restore: lazy-pages daemons listening', () => daemons.listening)));
    if (daemons && !lazy) await daemons.stop();
    // Everything above ran beside the caller's making of the root; runc needs its files from here on.
    const notReady = await o.rootReady?.then(
      () => undefined,
      (err: unknown) => ({ err }),
    );
    if (notReady) {
      if (lazy) await daemons.stop();
      await this.destroy(id, { keepBundle: true }).catch(() => {});
      throw notReady.err;
    }
    if (lazy) crashPoint('restore:helpers-started');
    const imagesDir = spec.idmap ? this.#mounts.imagesInReach(id) : o.imagesDir;
    const pidFile = join(bundle, 'init.pid');
    const args = ['restore', ...(lazy ? ['--lazy-pages'] : []), '--detach', '--image-path', imagesDir, '--work-path', workDir, '--tcp-established', '--file-locks', '--pid-file', pidFile, '--bundle', bundle, id];
    const viaBroker = lazy && daemons.broker ? { FORKD_UFFD_SOCK: daemons.broker, FORKD_UFFD_UID: String(spec.idmap!.hostId) } : undefined;
    const env = lazy || netEnv ? { ...viaBroker, ...(lazy && this.#o.lazyConnectWait && { FORKD_LAZY_WAIT_MS: String(LAZY_PAGES_START_MS), FORKD_LAZY_PID: String(await daemons.pages.pid) }), ...netEnv } : undefined;
    const r = await this.#runc(args, undefined, env, view).catch(async (err: unknown) => {
      if (lazy) await daemons.stopBroker();
      throw err;
    });
    // The broker serves the restore's start only (the lazy-pages daemon serves pages until all are in): it goes beside what follows.
    const brokerGone = lazy ? daemons.stopBroker() : undefined;
    if (r.code !== 0) {
      await brokerGone;
      return this.#restoreFailed(id, { r, args, workDir, daemons: lazy ? daemons : undefined }, () => this.#restore(id, requested, o, false));
    }
    // Its processes fault their pages from it now: no commit of this restore comes before this.
    if (lazy) daemons.release();
    // Until its last page is in, a dump would lose the pages still out (see LazyPagesWaits): on file before the
    // answer, beside the network's adoption (nothing dumps the instance before this returns).
    const registering = lazy ? this.#lazyPages.started(id, workDir, { pid: await daemons.pages.pid, exited: daemons.pages.exited }) : undefined;
    const pid = await this.#adopt(id, pidFile, ownNetns ? (spec.network ?? LOOPBACK_ONLY) : undefined).finally(() => Promise.all([registering, brokerGone]));
    return { status: 'running', pid, idmap: spec.idmap };
  }

  /** After a failed `runc restore`: cleaned up, then again eagerly (`eager`) if its lazy daemon never listened, else the error. */
  async #restoreFailed(id: string, f: { r: ExecResult; args: string[]; workDir: string; daemons: LazyDaemons | undefined }, eager: () => Promise<RuntimeState>): Promise<RuntimeState> {
    await f.daemons?.stop();
    const log = await readFile(join(f.workDir, 'restore.log'), 'utf8').catch(() => '');
    await this.destroy(id, { keepBundle: true }).catch(() => {});
    // Its daemon never listened (it died, or was late), so CRIU could not connect: eagerly, as before runc if known then.
    if (f.daemons && !(await f.daemons.listening)) return eager();
    throw new ForkdError('INTERNAL', `criu restore failed: ${criuError(log) || f.r.stderr.trim().slice(-300)}`, { cmd: `runc ${f.args.join(' ')}`, exitCode: f.r.code, stderrTail: (log || f.r.stderr).slice(-4000), logPath: join(f.workDir, 'restore.log') });
  }

  /** The started or restored init's pid; with `rules`, runc or CRIU made its namespace: the host holds it under the sandbox's key (port proxy, release), loopback up. */
  async #adopt(id: string, pidFile: string, rules: NetworkRules | undefined): Promise<number> {
    // Synchronously: a few bytes of a local file, where a trip through the thread pool took ~3 ms of a busy host's restore.
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    chmodSync(pidFile, 0o600); // runc wrote it under its 022 (see #runc)
    if (rules) await this.#o.network.adopt(id, pid, rules);
    return pid;
  }

  /** A restore's bundle, its network (a veth in the images is made again with this instance's host end) and cgroups. */
  async #restoreBundle(id: string, spec: RuntimeSpec, ownNetns: boolean, imagesDir: string): Promise<{ bundle: string; view: RootView; netEnv: Record<string, string> | undefined }> {
    const netns = ownNetns ? undefined : await this.#o.network.prepare(id, spec.network ?? LOOPBACK_ONLY);
    const { bundle, view } = await this.#writeBundle(id, spec, netns, { images: spec.idmap ? imagesDir : undefined, loopbackHook: ownNetns, devInRoot: await dumpedWithDevInRoot(imagesDir) });
    const netEnv = ownNetns ? await restoreVethEnv(this.#o.network, id, imagesDir, bundle) : undefined;
    // runc restore binds the cgroups into the root before it makes them (see oci-spec.ts cgroupMounts).
    const { cgroupV1 } = await this.#mounts.sharedDirs();
    if (cgroupV1) await makeCgroupV1Dirs(this.cgroupPath(id), cgroupV1.hierarchies);
    return { bundle, view, netEnv };
  }

  /**
   * CRIU's lazy-pages daemon, and the broker that hands a user namespace's
   * restoring tasks their userfaultfd where they cannot open one, when this
   * restore is to be lazy (undefined: eager). Both run in the host's mount
   * namespace, where the images are only at their own path.
   */
  async #lazyDaemons(id: string, hostId: number | undefined, imagesDir: string, workDir: string): Promise<LazyDaemons | undefined> {
    const needsBroker = hostId !== undefined && !this.#uffdInUserns;
    const broker = needsBroker ? this.#brokerSocket(id, imagesDir) : undefined;
    if (!this.#o.lazyRestore || (needsBroker && !broker) || (await pagesBytes(imagesDir)) < this.#o.lazyRestoreMinBytes) return undefined;
    const sock = join(workDir, 'lazy-pages.socket');
    await rm(sock, { force: true });
    return startLazyDaemons({ sock, criu: this.#o.criu, imagesDir, workDir }, broker ? { sock: broker, tool: this.#o.uffdBroker, hostId: hostId! } : undefined);
  }

  async start(id: string, spec: RuntimeSpec): Promise<RuntimeState> {
    // In a user namespace runc makes the network namespace, adopted below (see Network.adopt).
    const { bundle, view } = await this.#writeBundle(id, spec, spec.idmap ? undefined : await this.#o.network.prepare(id, spec.network ?? LOOPBACK_ONLY));
    const log = join(bundle, 'runc.log');
    const pidFile = join(bundle, 'init.pid');
    await writeFile(log, '');
    const r = await this.#runc(['run', '--detach', '--no-new-keyring', '--pid-file', pidFile, '--bundle', bundle, id], log, undefined, view);
    if (r.code !== 0) {
      const tail = await readFile(log, 'utf8').catch(() => '');
      throw new ForkdError('INTERNAL', `runc run failed: ${lastRuncError(tail)}`, { cmd: `runc run ${id}`, exitCode: r.code, stderrTail: tail.slice(-4000) });
    }
    const pid = await this.#adopt(id, pidFile, spec.idmap ? (spec.network ?? LOOPBACK_ONLY) : undefined);
    return { status: 'running', pid, idmap: spec.idmap };
  }

  async state(id: string): Promise<RuntimeState> {
    const r = await this.#runc(['state', id]);
    if (r.code !== 0) return { status: 'missing', pid: 0 };
    try {
      const s = JSON.parse(r.stdout) as { status?: string; pid?: number };
      const status = (['created', 'running', 'paused', 'stopped'] as const).find((x) => x === s.status) ?? 'stopped';
      return { status: status as RuntimeStatus, pid: s.pid ?? 0, ...(this.#lazyPages.lost(id) && { cause: PAGES_LOST }) };
    } catch {
      return { status: 'missing', pid: 0 };
    }
  }

  async update(id: string, limits: Limits): Promise<void> {
    const mem = String(limits.memoryMb * 1024 * 1024);
    const args = ['update', '--memory', mem, ...(this.#swap ? ['--memory-swap', mem] : []), '--cpu-period', String(CPU_PERIOD_US), '--cpu-quota', String(cpuQuota(limits.cpus)), '--pids-limit', String(limits.pids), id];
    await this.#must(args, 'update');
  }

  async destroy(id: string, opts: { keepBundle?: boolean } = {}): Promise<void> {
    // Killed here (see killContainer), then deleted without --force: runc (1.1 to 1.3) answers --force by
    // signalling the init and sleeping 100 ms before it looks again, even at a container already stopped.
    const killed = await span('kill container', () => killContainer(this.cgroupPath(id), join(this.#o.bundleRoot, id, 'init.pid'))).catch(() => false);
    const plain = killed ? await this.#runc(['delete', id]) : undefined;
    if (plain?.code !== 0 && !(plain && GONE.test(plain.stderr))) await this.#forceDelete(id);
    // runc removes the cgroup of a container it knows; one whose state went (with /run on a reboot) leaves it.
    await removeCgroup(this.cgroupPath(id));
    this.#lazyPages.forget(id);
    await this.#mounts.unmount(id);
    if (!opts.keepBundle) {
      await this.#o.network.release(id);
      await rm(join(this.#o.bundleRoot, id), { recursive: true, force: true });
    }
  }

  /** runc's own kill: for tasks left after killContainer's deadline, or a runc that refused the plain delete. */
  async #forceDelete(id: string): Promise<void> {
    const r = await this.#runc(['delete', '--force', id]);
    if (r.code === 0 || GONE.test(r.stderr)) return;
    const again = await this.#runc(['delete', '--force', id]);
    if (again.code !== 0 && !GONE.test(again.stderr)) {
      throw new ForkdError('INTERNAL', `runc delete failed: ${again.stderr.trim().slice(-300)}`, { cmd: `runc delete --force ${id}`, exitCode: again.code, stderrTail: again.stderr.slice(-4000) });
    }
  }

  usage(id: string): Promise<ResourceUsage> {
    return readUsage(this.cgroupPath(id));
  }

  watchExit(id: string, onExit: () => void): ExitWatch {
    return firstExit(onExit, (fire) => watchCgroupEmpty(this.cgroupPath(id), fire), (fire) => this.#lazyPages.watchLoss(id, fire));
  }

  async list(): Promise<string[]> {
    const r = await this.#runc(['list', '--format', 'json']);
    const parsed = r.code === 0 ? (JSON.parse(r.stdout || 'null') as Array<{ id: string }> | null) : null;
    // A crash between making a namespace and starting runc leaves only the namespace; a reboot
    // empties runc's state (/run) but leaves bundles, and a lost runc state leaves the cgroup.
    const leftovers = [...(await readdir(this.#o.bundleRoot).catch(() => [] as string[])), ...(await childCgroups(this.#o.cgroupParent))].filter((n) => KEY.test(n));
    return [...new Set([...(parsed ?? []).map((c) => c.id), ...(await this.#o.network.list()), ...leftovers])];
  }

}

function lastRuncError(log: string): string {
  const lines = log.trim().split('\n').reverse();
  for (const l of lines) {
    try {
      const j = JSON.parse(l) as { level?: string; msg?: string };
      if (j.level === 'error' && j.msg) return j.msg.slice(0, 500);
    } catch {
      /* not JSON */
    }
  }
  return (lines[0] ?? 'unknown error').slice(0, 500);
}

/** What runc says of a container it does not know. */
const GONE = /does not exist|not found/i;

/** A runtime key (sandbox id or instance key): what bundle and cgroup names must look like to be ours. */
const KEY = /^[a-z0-9][a-z0-9.-]*$/;
