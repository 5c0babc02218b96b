import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { isRoot } from '../../testing/test-node.js';
import { rootDiskUsage, rootfsOps, type RootfsOp } from './rootfs-ops.js';

/** forkd-rootfs-ops against hostile roots on a plain directory (no pool needed): every refusal, and the host untouched. */
const skip = !isRoot && 'needs root (chattr, chmod of root-owned files)';
let dir: string;
let root: string;
let victim: string;
let server: Server;
let connections = 0;

before(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), 'forkd-rootfs-ops-'));
  root = join(dir, 'root');
  victim = join(dir, 'victim');
  await mkdir(root);
  await mkdir(victim, { mode: 0o700 });
  await chmod(victim, 0o700);
  await writeFile(join(victim, 'file'), 'secret');
  server = createServer((c) => {
    connections++;
    c.destroy();
  });
  await new Promise<void>((r) => server.listen(join(victim, 'sock'), r));
});

after(async () => {
  if (skip) return;
  server?.close();
  await exec('chattr', ['-R', '-i', dir], { allowFailure: true });
  await rm(dir, { recursive: true, force: true });
});

async function victimIntact(): Promise<void> {
  assert.equal((await lstat(victim)).mode & 0o7777, 0o700);
  assert.deepEqual((await readdir(victim)).sort(), ['file', 'sock']);
  assert.equal(await readFile(join(victim, 'file'), 'utf8'), 'secret');
}

const refused = (e: unknown) => e instanceof ForkdError && e.code === 'FAILED_PRECONDITION';

async function fresh(): Promise<void> {
  await exec('chattr', ['-R', '-i', root], { allowFailure: true });
  await rm(root, { recursive: true, force: true });
  await mkdir(root);
}

test('mkdir and chmod through a planted symlink are refused (the /dev/shm bug)', { skip }, async () => {
  await fresh();
  await mkdir(join(root, 'dev'));
  await symlink(victim, join(root, 'dev/shm'));
  await assert.rejects(rootfsOps(root, [['mkdir', 'dev/shm', 0o1777]]), refused);
  await assert.rejects(rootfsOps(root, [['chmod', 'dev/shm', 0o1777]]), refused);
  await assert.rejects(rootfsOps(root, [['mkdir', 'dev/shm/x', 0o755]]), refused);
  await rm(join(root, 'dev'), { recursive: true });
  await symlink(victim, join(root, 'dev'));
  await assert.rejects(rootfsOps(root, [['mkdir', 'dev/shm', 0o1777]]), refused, 'a symlink in the middle too');
  await victimIntact();
});

test('mountpoint: the right kind stays with its content, anything else (a link included) is replaced, never followed', { skip }, async () => {
  await fresh();
  await mkdir(join(root, 'dev/shm'), { recursive: true });
  await writeFile(join(root, 'dev/shm/kept'), 'shm');
  await writeFile(join(root, 'dev/full'), 'was a mount point');
  await symlink(join(victim, 'file'), join(root, 'dev/null'));
  await symlink(victim, join(root, 'dev/pts'));
  await mkdir(join(root, 'dev/zero'));
  await symlink(join(victim, 'file'), join(root, 'dev/zero/inside'));
  const ops = (['null', 'zero', 'full', 'tty'] as const).map((d): RootfsOp => ['mountpoint', `dev/${d}`, 'file']);
  await rootfsOps(root, [['mountpoint', 'dev', 'dir'], ['mountpoint', 'dev/pts', 'dir'], ...ops]);
  for (const d of ['null', 'zero', 'tty']) {
    const st = await lstat(join(root, 'dev', d));
    assert.ok(st.isFile() && st.size === 0, `dev/${d} is an empty file`);
  }
  assert.ok((await lstat(join(root, 'dev/pts'))).isDirectory());
  assert.equal(await readFile(join(root, 'dev/full'), 'utf8'), 'was a mount point', 'a regular file stays');
  assert.equal(await readFile(join(root, 'dev/shm/kept'), 'utf8'), 'shm', 'a real directory keeps its content');
  await victimIntact();
  // The directory itself a link: replaced by an empty one; a link on the way to a mount point is refused.
  await fresh();
  await symlink(victim, join(root, 'dev'));
  await assert.rejects(rootfsOps(root, [['mountpoint', 'dev/null', 'file']]), refused);
  await rootfsOps(root, [['mountpoint', 'dev', 'dir'], ['mountpoint', 'dev/null', 'file']]);
  assert.deepEqual(await readdir(join(root, 'dev')), ['null']);
  await victimIntact();
});

test('rmtree removes links, never what they point at; install never writes through an entry', { skip }, async () => {
  await fresh();
  await symlink(victim, join(root, '.forkd'));
  await rootfsOps(root, [['unseal', '.forkd'], ['rmtree', '.forkd'], ['mkdir', '.forkd', 0o700], ['install', '/etc/hostname', '.forkd/init', 0o755]]);
  assert.ok((await lstat(join(root, '.forkd'))).isDirectory());
  assert.equal((await lstat(join(root, '.forkd/init'))).mode & 0o7777, 0o755);
  await rm(join(root, '.forkd/init'));
  await symlink(join(victim, 'file'), join(root, '.forkd/init'));
  await assert.rejects(rootfsOps(root, [['install', '/etc/hostname', '.forkd/init', 0o755]]), refused);
  await mkdir(join(root, 'tree/a'), { recursive: true });
  await symlink(victim, join(root, 'tree/a/link'));
  await rootfsOps(root, [['rmtree', 'tree']]);
  await assert.rejects(lstat(join(root, 'tree')));
  await victimIntact();
});

test('the agent directory: sealed only when real, and a swapped socket is refused', { skip }, async () => {
  await fresh();
  // A symlinked directory: never sealed, never followed.
  await symlink(victim, join(root, '.forkd'));
  await assert.rejects(rootfsOps(root, [['seal-agent', '.forkd', 'sock', 50]]), refused);
  await assert.rejects(rootfsOps(root, [['check-agent', '.forkd', 'sock']]), refused);
  await rm(join(root, '.forkd'));
  // A real directory whose socket is a symlink to a host socket: sealed, then refused.
  await mkdir(join(root, '.forkd'));
  await symlink(join(victim, 'sock'), join(root, '.forkd/sock'));
  await assert.rejects(rootfsOps(root, [['seal-agent', '.forkd', 'sock', 50]]), refused);
  await rootfsOps(root, [['rmtree', '.forkd'], ['mkdir', '.forkd', 0o700]]);
  // Not there yet: missing (the caller waits again).
  await assert.rejects(rootfsOps(root, [['seal-agent', '.forkd', 'sock', 20]]), (e: unknown) => e instanceof ForkdError && e.code === 'UNAVAILABLE');
  // A real socket: sealed and checked; unsealed, the check refuses it.
  const agent = createServer();
  await new Promise<void>((r) => agent.listen(join(root, '.forkd/sock'), r));
  await rootfsOps(root, [['seal-agent', '.forkd', 'sock', 50]]);
  await rootfsOps(root, [['check-agent', '.forkd', 'sock']]);
  assert.match((await exec('lsattr', ['-d', join(root, '.forkd')])).stdout, /^\S*i/);
  await rootfsOps(root, [['unseal', '.forkd']]);
  await assert.rejects(rootfsOps(root, [['check-agent', '.forkd', 'sock']]), refused, 'not sealed');
  agent.close();
  // One that appears while it waits (a cold start's agent): found, sealed.
  await rootfsOps(root, [['unseal', '.forkd'], ['rmtree', '.forkd'], ['mkdir', '.forkd', 0o700]]);
  const late = createServer();
  const t0 = Date.now();
  setTimeout(() => late.listen(join(root, '.forkd/sock')), 150);
  await rootfsOps(root, [['seal-agent', '.forkd', 'sock', 5000]]);
  assert.ok(Date.now() - t0 >= 140, 'it waited for the socket');
  await rootfsOps(root, [['check-agent', '.forkd', 'sock']]);
  late.close();
  assert.equal(connections, 0);
  await victimIntact();
});

test('du walks by descriptors and never leaves the root', { skip }, async () => {
  await fresh();
  await writeFile(join(victim, 'big'), Buffer.alloc(4 << 20, 1));
  await symlink(victim, join(root, 'link'));
  await exec('sync', []);
  const u = await rootDiskUsage(root);
  assert.equal(u.totalBytes, 0, 'the 4 MiB behind the link are not counted');
  await rm(join(victim, 'big'));
  await rm(join(root, 'link'));
  await victimIntact();
});

test('paths with .. or . are refused as usage errors', { skip }, async () => {
  await assert.rejects(rootfsOps(root, [['mkdir', '../x', 0o755]]), (e: unknown) => e instanceof ForkdError && e.code === 'INTERNAL');
  await assert.rejects(rootfsOps(root, [['rmtree', 'a/./b']]), (e: unknown) => e instanceof ForkdError && e.code === 'INTERNAL');
  await victimIntact();
});
