import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ensureRunc } from './private-runc.js';
import { ownTmp } from '../shared/own-tmp.js';
import { ForkdError } from '@forkd/protocol';
import type { ForkdConfig } from '../shared/config.js';
import { REPO_ROOT } from '../shared/config.js';
import { exec } from '../shared/exec.js';
import { hostInfo, type HostInfo } from './host-info.js';
import { cgroupVersion } from '../node/cgroups/cgroups.js';
import { SETUP_STEPS } from './setup-steps.js';

export type Progress = (event: { step: string; detail?: string; done?: boolean; ms?: number }) => void;

/** Host packages forkd drives (criu comes from a private root: see ensureCriu). */
export const PACKAGES = ['btrfs-progs', 'debootstrap', 'runc', 'patchelf', 'iproute2', 'nftables', 'gcc', 'libc6-dev', 'make', 'util-linux', 'procps', 'e2fsprogs', 'openssl', 'skopeo'];

/**
 * Installed by `forkd setup` only, not at every start nor in the image
 * (scripts/build-image.sh takes PACKAGES), for the tests: the PostgreSQL
 * control store's tests start a server of their own from these binaries
 * (testing/postgres-server.ts; forkd itself only connects to one,
 * FORKD_DATABASE_URL; Debian's package also makes a `main` cluster); the
 * image tests start a registry (docker-registry, distribution 2.8) on
 * loopback and build images offline from a static busybox and musl programs;
 * the web console's end-to-end test drives Debian's chromium (playwright-core).
 */
const SETUP_ONLY_PACKAGES = ['postgresql', 'docker-registry', 'busybox-static', 'musl-tools', 'chromium'];

/**
 * umask of the tools that build root filesystems sandboxes will run on
 * (debootstrap, chroot'ed apt and useradd): the daemon's own is 077
 * (shared/private-state.ts), which would leave every file they write by
 * redirection root-only inside the sandbox. The cache they write into is
 * itself root-only (a 0700 gate).
 */
const ROOTFS_UMASK = 0o022;

/** Contents of the default template; a change of this list rebuilds it. */
export const BASE_PACKAGES = ['bash', 'coreutils', 'procps', 'python3', 'python-is-python3', 'git', 'curl', 'ca-certificates', 'ncurses-bin', 'less', 'iproute2', 'sudo'];

/**
 * The base recipe's version: part of the cached root filesystem's directory
 * name, so hosts (and worktrees) on different recipes share the cache
 * without rebuilding each other's.
 */
const BASE_RECIPE_VERSION = 3;

export async function dpkgInstalled(pkg: string): Promise<boolean> {
  const r = await exec('dpkg-query', ['-W', '-f=${Status}', pkg], { allowFailure: true });
  return r.code === 0 && r.stdout.includes('install ok installed');
}

/** `forkd setup`'s packages beyond what every start needs (SETUP_ONLY_PACKAGES). */
export async function installSetupOnlyPackages(progress: Progress): Promise<void> {
  await step(progress, SETUP_STEPS.testPackages.name, (d) => installPackages(SETUP_ONLY_PACKAGES, d));
  // Debian starts the registry as a service on :5000 of every address: the tests start their own on loopback.
  if (existsSync('/run/systemd/system')) await exec('systemctl', ['disable', '--now', 'docker-registry'], { allowFailure: true });
}

async function step<T>(progress: Progress, name: string, fn: (detail: (d: string) => void) => Promise<T>): Promise<T> {
  const t0 = Date.now();
  progress({ step: name });
  const out = await fn((d) => progress({ step: name, detail: d }));
  progress({ step: name, done: true, ms: Date.now() - t0 });
  return out;
}

/** Packages an install must never upgrade as a side effect (a Debian 13 suite next to 12 would). */
const PROTECTED = ['libc6', 'libc-bin', 'systemd', 'libsystemd0'];

/** Installs missing Debian packages, refusing any plan that would upgrade libc or systemd. */
export async function installPackages(pkgs: string[], detail: (d: string) => void): Promise<void> {
  const missing: string[] = [];
  for (const p of pkgs) if (!(await dpkgInstalled(p))) missing.push(p);
  if (!missing.length) return;
  detail(`installing ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await exec('apt-get', ['update', '-q'], { env, timeoutMs: 600_000 });
  const plan = await exec('apt-get', ['install', '-s', '-q', '--no-install-recommends', ...missing], { env, timeoutMs: 600_000 });
  const upgraded = plan.stdout.split('\n').filter((l) => /^Inst \S+ \[/.test(l)).map((l) => l.split(' ')[1]!);
  const bad = upgraded.filter((p) => PROTECTED.includes(p.replace(/:.*/, '')));
  if (bad.length) throw new ForkdError('FAILED_PRECONDITION', `installing ${missing.join(' ')} would upgrade ${bad.join(', ')}; refusing (check the apt sources)`, { plan: plan.stdout.slice(-4000) });
  // --no-install-recommends: runc recommends Debian 12's criu 3.17, which fails on current kernels.
  await exec('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], { env, timeoutMs: 1_200_000, onStdout: (l) => detail(l.trim().split('\n').pop() ?? '') });
}

/** Path of the criu forkd runs (a wrapper on Debian 12, the host's binary on 13). */
export function criuPath(config: ForkdConfig): string {
  return join(config.cacheDir, 'bin', 'criu');
}

export async function criuVersion(criu: string): Promise<number[] | null> {
  const r = await exec(criu, ['--version'], { allowFailure: true }).catch(() => null);
  return r ? parseCriuVersion(r.stdout) : null;
}

/** [major, minor] of `criu --version`'s output. */
export function parseCriuVersion(text: string): number[] | null {
  const m = /Version:\s*(\d+)\.(\d+)/.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** CRIU's action script: forkd-criu-action (packages/host-tools), installed into the cache by setup. */
export function criuActionPath(config: ForkdConfig): string {
  return join(config.cacheDir, 'bin', 'criu-action');
}

/** CRIU's extra config for dumps (the action script): named to criu's wrapper, which gives it to CRIU only for a dump it does not relay. */
export function criuDumpConfigPath(config: ForkdConfig): string {
  return join(config.cacheDir, 'criu-home', '.criu', 'dump.conf');
}

/**
 * CRIU's action script is forkd-criu-action (packages/host-tools; see its
 * README and RuncRuntime.checkpoint): at pre-dump it freezes the sandbox's
 * cgroup and waits in the kernel until it is frozen, records the instant and
 * starts the filesystem snapshot alongside the dump; at post-dump it blocks
 * on a FIFO for that snapshot's status, with deadlines in seconds. A copy
 * goes into the cache (replaced atomically): a rebuild of host-tools never
 * swaps it under a running dump.
 */
async function installCriuAction(config: ForkdConfig): Promise<void> {
  for (const [from, to] of [
    ['forkd-criu-action', criuActionPath(config)],
    ['forkd-criu-version', criuVersionToolPath(config)],
    ['libforkd-uffd.so', uffdPreloadPath(config)],
  ] as const) {
    await installBuilt(from, to);
  }
}

/** A host tool from packages/host-tools/build copied to `to` and swapped in atomically (never rewritten under a running one). */
async function installBuilt(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  const built = join(REPO_ROOT, 'packages/host-tools/build', from);
  // Unchanged: left alone. Daemons set up side by side (a fleet's nodes) would otherwise swap a tool in while
  // another runs it, and a child forked during the copy still holding it open makes that exec fail (ETXTBSY).
  if ((await sameBytes(built, to)) && ((await stat(to)).mode & 0o777) === 0o755) return;
  const tmp = ownTmp(to);
  await copyFile(built, tmp);
  await chmod(tmp, 0o755);
  await rename(tmp, to);
}

async function sameBytes(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([readFile(a), readFile(b).catch(() => undefined)]);
  return y !== undefined && x.equals(y);
}

/** A file others read at any moment (CRIU's configs, the launch file), replaced atomically: never seen half-written. */
async function writeWhole(path: string, text: string): Promise<void> {
  if ((await readFile(path, 'utf8').catch(() => undefined)) === text) return;
  const tmp = ownTmp(path);
  await writeFile(tmp, text, { mode: 0o644 });
  await rename(tmp, path);
}

/** forkd-criu-version (host-tools): answers runc's version probe with CRIU's recorded reply (see its source). */
function criuVersionToolPath(config: ForkdConfig): string {
  return join(config.cacheDir, 'bin', 'criu-version');
}

/**
 * runc asks CRIU's version with a `criu swrk` of its own before every
 * checkpoint and restore. The wrapper answers that probe with the reply of
 * this CRIU, recorded anew whenever setup runs (so never another CRIU's): a
 * process of a millisecond instead of CRIU's start. Anything else, or no
 * reply recorded, goes to CRIU itself.
 */
async function recordCriuVersion(config: ForkdConfig, wrapper: string): Promise<void> {
  const reply = `${wrapper}-version.reply`;
  await rm(reply, { force: true });
  // Without a reply every probe goes to CRIU, as before: slower, never wrong.
  await exec(criuVersionToolPath(config), ['record', wrapper, reply], { allowFailure: true });
}

/**
 * The `criu` runc and forkd run is forkd-criu-version installed under that
 * name (no shell at each CRIU run, see its source): it answers runc's
 * version probe (see recordCriuVersion; FORKD_CRIU_ASK_VERSION=1 sends it to
 * CRIU all the same, the bench measures this lever alone) and otherwise
 * runs CRIU through its private root's loader and libraries, HOME pointing
 * at forkd's CRIU config, libforkd-uffd.so preloaded when FORKD_UFFD_SOCK is
 * set. What it runs is in `criu.launch` beside it, one item per line.
 */
async function installCriuLauncher(config: ForkdConfig, wrapper: string, root: string, home: string): Promise<void> {
  const lib = `${root}/lib/x86_64-linux-gnu:${root}/usr/lib/x86_64-linux-gnu`;
  const launch = [`${wrapper}-version.reply`, home, uffdPreloadPath(config), `${root}/lib64/ld-linux-x86-64.so.2`, '--library-path', lib, `${root}/usr/sbin/criu`];
  await writeWhole(`${wrapper}.launch`, launch.join('\n') + '\n');
  await installBuilt('forkd-criu-version', wrapper);
}

/**
 * Preloaded into criu when the runtime sets FORKD_UFFD_SOCK: it lets lazy
 * restores into a user namespace get their userfaultfd from /dev/userfaultfd
 * (see packages/host-tools/src/uffd-broker and uffd-preload).
 */
export function uffdPreloadPath(config: ForkdConfig): string {
  return join(config.cacheDir, 'bin', 'libforkd-uffd.so');
}

/** The Debian suite CRIU comes from; its loader and libraries stay in their own root. */
const CRIU_SUITE = process.env.FORKD_CRIU_SUITE || 'forky';

/** The private Debian root of forkd's own CRIU and runc (the host's libc is never upgraded). */
export function privateRoot(config: ForkdConfig): string {
  return join(config.cacheDir, `criu-${CRIU_SUITE}`);
}
/** 4.2 is the first CRIU that can dump sockets on Linux ≥ 6.16 (SO_PASSCRED is unix-only there). */
export const CRIU_MIN: [number, number] = [4, 2];

export function atLeast(v: number[] | null, min: [number, number]): boolean {
  return !!v && (v[0]! > min[0] || (v[0] === min[0] && v[1]! >= min[1]));
}

/**
 * CRIU ≥ 4.2 in a private minimal Debian root, run through that root's own
 * loader and libraries: Debian 12's 3.17 cannot dump on 6.x kernels, Debian
 * 13's 4.1 fails on any TCP socket on ≥ 6.16, and a newer criu from the host's
 * apt would upgrade libc. The host's packages are never touched.
 */
async function ensureCriu(config: ForkdConfig, host: HostInfo, detail: (d: string) => void): Promise<string> {
  const wrapper = criuPath(config);
  // runc drives criu over RPC and offers no way to pass --network-lock skip
  // (a config file named in the RPC crashes criu), but criu also reads
  // $HOME/.criu/default.conf: the wrapper points HOME at forkd's own.
  const home = join(config.cacheDir, 'criu-home');
  await mkdir(join(home, '.criu'), { recursive: true });
  // No iptables on these hosts, and sandboxes have no external network to
  // lock. The runtime puts restored tasks into their cgroup itself, so CRIU
  // neither records nor restores cgroups; on v1 it also need not mount every
  // hierarchy again (~15 ms per dump) when pointed at the host's. The action
  // script is how forkd freezes the sandbox for CRIU's dump (RuncRuntime.checkpoint); CRIU runs it at
  // every step (a process each, 4-9 ms here), so it is named for dumps only (by the runtime, to criu's wrapper:
  // a dump it relays runs its steps in the wrapper and no script; see host-tools' README), and a restore runs none.
  const conf = ['network-lock skip', 'manage-cgroups ignore', ...(cgroupVersion() === 1 ? ['cgroup-yard /sys/fs/cgroup'] : [])];
  // Swapped in whole: CRIU reads them at every start, --version included, and daemons set up side by side
  // (a fleet's nodes) rewrote them under each other's probe, which then may read one half-written.
  await writeWhole(join(home, '.criu', 'default.conf'), conf.join('\n') + '\n');
  await writeWhole(criuDumpConfigPath(config), `action-script ${criuActionPath(config)}\n`);
  await mkdir(join(config.cacheDir, 'bin'), { recursive: true });
  const root = privateRoot(config);
  if (!existsSync(join(root, 'usr/sbin/criu'))) {
    const tmp = `${root}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    detail(`debootstrap of a private Debian ${CRIU_SUITE} root for criu`);
    // Named by the sid script so an older debootstrap still knows the suite.
    await exec('debootstrap', ['--variant=minbase', '--include=criu', CRIU_SUITE, tmp, host.mirror, '/usr/share/debootstrap/scripts/sid'], {
      timeoutMs: 1_800_000,
      umask: ROOTFS_UMASK,
      onStdout: (l) => detail(l.trim().split('\n').pop() ?? ''),
    }).finally(() => releaseMounts(tmp));
    await exec('chroot', [tmp, 'apt-get', 'clean'], { umask: ROOTFS_UMASK });
    await rm(root, { recursive: true, force: true });
    await rename(tmp, root);
  }
  await installCriuLauncher(config, wrapper, root, home);
  await recordCriuVersion(config, wrapper);
  const got = await criuVersion(wrapper);
  if (!atLeast(got, CRIU_MIN)) throw new ForkdError('FAILED_PRECONDITION', `criu ≥ ${CRIU_MIN.join('.')} is required, got ${got?.join('.') ?? 'none'}`);
  // An older private root (Debian 13's criu 4.1) is no longer used.
  await rm(join(config.cacheDir, 'criu-root'), { recursive: true, force: true });
  return `criu ${got!.join('.')}`;
}

/**
 * debootstrap mounts /proc and /sys inside its target and leaves them there
 * when it fails or their unmount is refused as busy: a later copy of the
 * root would then walk the host's /proc (kcore and all).
 */
async function releaseMounts(dir: string): Promise<void> {
  const info = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const under = info
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of under) await exec('umount', ['--lazy', m], { allowFailure: true });
}

/** Builds the guest agent and the host tools when their sources are newer than the binaries. */
export async function buildNative(): Promise<void> {
  await exec('make', ['-s', '-C', join(REPO_ROOT, 'packages/guest')], { timeoutMs: 300_000 });
  await exec('make', ['-s', '-C', join(REPO_ROOT, 'packages/host-tools')], { timeoutMs: 300_000 });
}

function recipeHash(host: HostInfo): string {
  return createHash('sha256').update(JSON.stringify({ v: BASE_RECIPE_VERSION, codename: host.codename, pkgs: BASE_PACKAGES })).digest('hex').slice(0, 16);
}

/** Path of the cached root filesystem of the `base` template (a plain directory). */
export function baseRootfsDir(config: ForkdConfig): string {
  return join(config.cacheDir, 'rootfs', `base-v${BASE_RECIPE_VERSION}`);
}

/**
 * The `base` root filesystem: minimal Debian of the host's release plus the
 * tools agents expect (python as python3, sudo), and `user` (uid 1000, group
 * user, home /home/user, passwordless sudo: E2B's default user). Built once into
 * the cache; a marker written last makes a half-built one impossible to reuse.
 */
async function ensureBaseRootfs(config: ForkdConfig, host: HostInfo, detail: (d: string) => void): Promise<string> {
  const dir = baseRootfsDir(config);
  const marker = join(dir, '.forkd-recipe');
  const want = recipeHash(host);
  if ((await readFile(marker, 'utf8').catch(() => '')) === want) return dir;
  const tmp = `${dir}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(join(config.cacheDir, 'rootfs'), { recursive: true });
  await exec('debootstrap', ['--variant=minbase', `--include=${BASE_PACKAGES.join(',')}`, host.codename, tmp, host.mirror], {
    timeoutMs: 1_800_000,
    umask: ROOTFS_UMASK,
    onStdout: (l) => detail(l.trim().split('\n').pop() ?? ''),
  }).finally(() => releaseMounts(tmp));
  await exec('chroot', [tmp, 'useradd', '--create-home', '--shell', '/bin/bash', '--uid', '1000', '--user-group', 'user'], { umask: ROOTFS_UMASK });
  // E2B's `base` has the same: `user` may sudo without a password (agents install packages).
  await writeFile(join(tmp, 'etc/sudoers.d/user'), 'user ALL=(ALL:ALL) NOPASSWD: ALL\n');
  await chmod(join(tmp, 'etc/sudoers.d/user'), 0o440);
  await exec('chroot', [tmp, 'apt-get', 'clean'], { umask: ROOTFS_UMASK });
  await rm(join(tmp, 'var/lib/apt/lists'), { recursive: true, force: true });
  // Modes given outright: forkd's own umask (077) would leave these root-only inside every sandbox.
  await mkdir(join(tmp, 'var/lib/apt/lists/partial'), { recursive: true });
  await chmod(join(tmp, 'var/lib/apt/lists'), 0o755);
  await chmod(join(tmp, 'var/lib/apt/lists/partial'), 0o700);
  await writeFile(join(tmp, 'etc/hostname'), 'sandbox\n');
  await chmod(join(tmp, 'etc/hostname'), 0o644);
  await writeFile(join(tmp, '.forkd-recipe'), want);
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
  return dir;
}

export interface SetupResult {
  criu: string;
  baseRootfs: string;
  host: HostInfo;
}

/**
 * Host-level set-up shared by every pool on the machine: packages, CRIU,
 * guest agent, template root filesystems. Idempotent and quick when done.
 */
export async function setupHost(config: ForkdConfig, progress: Progress): Promise<SetupResult> {
  if (process.getuid?.() !== 0) throw new ForkdError('PERMISSION_DENIED', 'forkd setup must run as root');
  const host = await hostInfo();
  await step(progress, SETUP_STEPS.systemPackages.name, (d) => installPackages(PACKAGES, d));
  await step(progress, SETUP_STEPS.native.name, () => buildNative());
  await installCriuAction(config);
  const criu = await step(progress, SETUP_STEPS.criu.name, (d) => ensureCriu(config, host, d));
  await step(progress, SETUP_STEPS.runc.name, (d) => ensureRunc(config, privateRoot(config), d));
  const baseRootfs = await step(progress, SETUP_STEPS.baseRootfs.name, (d) => ensureBaseRootfs(config, host, d));
  return { criu, baseRootfs, host };
}
