import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../shared/exec.js';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { waitFor } from '../testing/helpers.js';
import { assertStillServing } from '../testing/still-serving.js';
import { buildSyscallProbe, PROBE_PATH } from '../testing/syscall-probe.js';

/**
 * Root in a sandbox with `--disk 64` tries to store more than 64 MiB by every
 * path we could think of (issue 23: a nested Btrfs subvolume did, 300 MB, and
 * made the sandbox undeletable). Each case measures what the pool really
 * grew by; the sandbox's writes must stop at its quota. Then roots holding
 * nested subvolumes (made from the host, as a pool from before the fix holds
 * them) are rewound and deleted, and nothing of them stays in the pool.
 */

const MiB = 2 ** 20;
const QUOTA_MB = 64;
/** What a full quota may grow the pool by: the data, its metadata, checksums and the extent tree's back references. */
const GROWTH_BOUND = (QUOTA_MB + 32) * MiB;
const REFUSED = /Disk quota exceeded|No space left|EDQUOT|ENOSPC/;

/** Bytes used in the pool (data, metadata, system), after a commit so frees and writes are counted. */
async function poolUsedBytes(pool: string): Promise<number> {
  await exec('btrfs', ['filesystem', 'sync', pool]);
  const out = (await exec('btrfs', ['filesystem', 'df', '-b', pool])).stdout;
  return [...out.matchAll(/^(?:Data|Metadata|System)[^:]*:.*used=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Paths of the pool's subvolumes, relative to it (this test makes no odd names). */
async function subvolumes(pool: string): Promise<string[]> {
  const out = (await exec('btrfs', ['subvolume', 'list', pool])).stdout;
  return out
    .split('\n')
    .map((l) => / path (.+)$/.exec(l)?.[1])
    .filter((p): p is string => !!p);
}

/** A Python program run as root in the sandbox: prints what it reached and the errno that stopped it. */
const py = (body: string) => ['python3', '-c', `import errno, os\ntry:\n${body.replace(/^/gm, '    ')}\nexcept OSError as e:\n    print('stopped', errno.errorcode.get(e.errno))`];

describe('adversarial: a sandbox cannot store past its disk quota, and nested subvolumes never block a delete', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let t: ApiTarget;
  let pool = '';
  let neighbour = '';
  let id = '';

  const sh = (sbx: string, script: string) => execHttp(t, sbx, ['bash', '-c', script]);
  const probe = async (...args: string[]) => (await execHttp(t, id, [PROBE_PATH, ...args])).stdout.trim();
  const create = async (body: object) => {
    const r = await api(t, 'POST', '/v1/sandboxes', body);
    assert.equal(r.status, 201, r.text);
    return r.json.id as string;
  };

  /** Runs an attack; asserts the pool grew by no more than a full quota; runs the cleanup. */
  const attack = async (tc: TestContext, cmd: string[], cleanup: string) => {
    const before0 = await poolUsedBytes(pool);
    const r = await execHttp(t, id, cmd);
    const grew = (await poolUsedBytes(pool)) - before0;
    tc.diagnostic(`pool grew by ${(grew / MiB).toFixed(1)} MiB: ${r.stdout.trim().split('\n').pop()}`);
    assert.ok(grew < GROWTH_BOUND, `the pool grew by ${Math.round(grew / MiB)} MiB for a ${QUOTA_MB} MiB quota; the attack said: ${r.stdout.slice(-500)}`);
    assert.equal((await sh(id, `${cleanup}; sync`)).exit, 0);
    return r.stdout;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-quota-escape-'));
    cfg = testConfig(dir);
    pool = cfg.config.pool.mountPoint;
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_SNAPSHOT_INTERVAL_S: '0', FORKD_IDLE_TIMEOUT_S: '0' });
    t = { url: daemon.url, apiKey: daemon.apiKey };
    neighbour = await create({ memoryMb: 128 });
    id = await create({ diskMb: QUOTA_MB, memoryMb: 256 });
    const put = await fetch(`${t.url}/v1/sandboxes/${id}/files?path=${PROBE_PATH}&mode=${0o755}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/octet-stream' },
      body: await buildSyscallProbe(dir),
    });
    assert.equal(put.status, 201, await put.text());
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('a nested subvolume or a snapshot cannot be made, whatever the high bits of the request', async (tc) => {
    const count = (await subvolumes(pool)).length;
    // The reported attack: a subvolume of its own (whose qgroup is not the sandbox's), then 200 MB into it.
    const out = await attack(tc, ['bash', '-c', `${PROBE_PATH} subvol-create /nested; mkdir -p /nested; dd if=/dev/urandom of=/nested/fill bs=1M count=200 2>&1`], 'rm -rf /nested');
    assert.match(out, /^EPERM\n/);
    assert.match(out, REFUSED);
    for (const high of ['0x1', '0x80000000', '0xffffffff']) assert.equal(await probe('subvol-create', '/nested', high), 'EPERM', `high bits ${high}`);
    assert.equal(await probe('snapshot-create', '/', '/snap'), 'EPERM');
    assert.equal(await probe('snapshot-create', '/', '/snap', '0xffffffff'), 'EPERM');
    assert.equal((await subvolumes(pool)).length, count, 'no subvolume appeared in the pool');
    await assertStillServing(t, neighbour, daemon?.child);
  });

  test('/tmp, hard links and reflink copies: the quota holds; reflinks themselves work', async (tc) => {
    assert.match(await attack(tc, ['bash', '-c', 'dd if=/dev/urandom of=/tmp/fill bs=1M count=200 2>&1'], 'rm -f /tmp/fill'), REFUSED);
    const links = await attack(tc, 
      py("open('/root/h', 'wb').write(os.urandom(40 << 20))\nfor i in range(5000): os.link('/root/h', f'/root/h{i}')\nprint('links', os.stat('/root/h').st_nlink)\nopen('/root/more', 'wb').write(os.urandom(100 << 20))"),
      'rm -f /root/h* /root/more',
    );
    assert.match(links, /links 5001\nstopped EDQUOT/);
    const reflinks = await attack(tc, 
      ['bash', '-c', 'dd if=/dev/urandom of=/root/r bs=1M count=40 status=none && for i in $(seq 1 30); do cp --reflink=always /root/r /root/r$i || echo REFLINK-FAILED; done; echo copies $(ls /root | grep -c "^r"); dd if=/dev/urandom of=/root/more bs=1M count=100 2>&1'],
      'rm -f /root/r* /root/more',
    );
    assert.doesNotMatch(reflinks, /REFLINK-FAILED/, 'FICLONE is an ordinary ioctl');
    assert.match(reflinks, /copies 31/);
    assert.match(reflinks, REFUSED);
    await assertStillServing(t, neighbour, daemon?.child);
  });

  test('sparse files, xattrs and many tiny files: the quota holds', async (tc) => {
    const sparse = await attack(tc, 
      py("f = open('/root/sparse', 'wb')\nf.truncate(1 << 40)\nfor i in range(200):\n    f.seek(i << 30)\n    f.write(os.urandom(1 << 20))\n    f.flush()\n    os.fsync(f.fileno())\nprint('wrote all')"),
      'rm -f /root/sparse',
    );
    assert.match(sparse, /stopped EDQUOT/);
    const xattrs = await attack(tc, 
      py("os.mkdir('/root/x')\nfor i in range(1000):\n    p = f'/root/x/{i}'\n    open(p, 'w').close()\n    for j in range(100): os.setxattr(p, f'user.k{j}', os.urandom(3000))\nprint('wrote all')"),
      'rm -rf /root/x',
    );
    assert.match(xattrs, /stopped (EDQUOT|ENOSPC)/);
    const tiny = await attack(tc, py("os.mkdir('/root/t')\nfor i in range(400000): open(f'/root/t/{i}', 'wb').write(os.urandom(1500))\nprint('wrote all')"), 'rm -rf /root/t');
    assert.match(tiny, /stopped (EDQUOT|ENOSPC)/);
    await assertStillServing(t, neighbour, daemon?.child);
  });

  // /dev is a directory of the root (oci-spec.ts devMounts): /dev/shm counts against the disk quota, like
  // any file (with FORKD_DEV_IN_ROOT=0 it is a tmpfs, bounded by the 256 MiB memory limit instead).
  test('/dev/shm is bounded by the disk quota', async (tc) => {
    const r = await execHttp(t, id, ['bash', '-c', 'dd if=/dev/urandom of=/dev/shm/fill bs=1M count=1024 2>&1; echo rc=$?']);
    const held = Number((await sh(id, 'du -sm /dev/shm | cut -f1; rm -f /dev/shm/fill')).stdout.trim());
    tc.diagnostic(`/dev/shm held ${held} MiB; dd: ${r.stdout.trim().split('\n').slice(-2).join(' | ')}`);
    assert.match(r.stdout, REFUSED, 'dd is stopped');
    assert.ok(held <= QUOTA_MB, `/dev/shm held ${held} MiB in a sandbox with a ${QUOTA_MB} MiB quota (dd: ${r.stdout.slice(-300)}, exit ${r.exit})`);
    assert.equal((await sh(id, 'echo ok')).stdout, 'ok\n', 'the sandbox still runs');
    await assertStillServing(t, neighbour, daemon?.child);
  });

  test('a root holding nested subvolumes (an old pool) is rewound and deleted, and leaves nothing in the pool', async () => {
    const baseline = await subvolumes(pool);
    const victim = await create({ diskMb: QUOTA_MB, memoryMb: 128 });
    const snap = await api(t, 'POST', `/v1/sandboxes/${victim}/snapshots`, {});
    assert.equal(snap.status, 201, snap.text);
    const nest = async () => {
      const key = (await readdir(join(pool, 'sandboxes'))).find((k) => k === victim || k.startsWith(`${victim}.`));
      assert.ok(key, 'the sandbox has a root');
      const root = join(pool, 'sandboxes', key);
      await exec('btrfs', ['subvolume', 'create', join(root, 'nested')]);
      await writeFile(join(root, 'nested', 'data'), Buffer.alloc(4 * MiB, 1));
      await exec('btrfs', ['subvolume', 'create', join(root, 'nested', 'deeper')]);
      await exec('btrfs', ['subvolume', 'snapshot', '-r', join(root, 'nested'), join(root, 'read-only')]);
      return key;
    };
    const gone = (key: string) => async () => !(await subvolumes(pool)).some((p) => p === `sandboxes/${key}` || p.startsWith(`sandboxes/${key}/`));

    const first = await nest();
    const rewound = await api(t, 'POST', `/v1/sandboxes/${victim}/rewind`, { snapshot: snap.json.id });
    assert.equal(rewound.status, 200, rewound.text);
    assert.equal((await execHttp(t, victim, ['echo', 'back'])).stdout, 'back\n');
    await waitFor(gone(first), 30_000, 'the root left by the rewind and what it held to be deleted');
    const after0 = (await subvolumes(pool)).filter((p) => p.startsWith(`sandboxes/${victim}`));
    assert.equal(after0.length, 1, `the new root alone, nothing nested carried into it: ${after0.join(', ')}`);

    const second = await nest();
    assert.notEqual(second, first);
    const del = await api(t, 'DELETE', `/v1/sandboxes/${victim}`);
    assert.equal(del.status, 204, del.text);
    assert.ok(await gone(second)(), 'the deleted root and what it held');
    assert.deepEqual(await subvolumes(pool), baseline, 'the pool holds what it held before the sandbox');
    await assertStillServing(t, neighbour, daemon?.child);
  });
});
