import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../testing/helpers.js';
import { isRoot } from '../../testing/test-node.js';
import { cgroupVersion, killCgroupAt } from './cgroups.js';

const ROOT = '/sys/fs/cgroup';
/** A hybrid host (this one) has a v2 hierarchy beside the v1 controllers: the v2 way is tested there too. */
const UNIFIED = cgroupVersion() === 2 ? ROOT : join(ROOT, 'unified');
const PIDS_MAX = 64;

/** Tasks listed in a cgroup. */
async function tasks(dir: string): Promise<number> {
  return (await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
}

/**
 * A shell that joins the cgroups and forks without end, held at PIDS_MAX by
 * the pids controller (v1's on a hybrid host): as many tasks as it can get,
 * always forking.
 */
function forkBomb(procsFiles: string[]): ChildProcess {
  const script = 'for f in "$@"; do echo $$ > "$f" || exit 9; done; while :; do sleep 30 & done';
  return spawn('/bin/sh', ['-c', script, 'sh', ...procsFiles], { stdio: 'ignore' });
}

describe('killCgroup (real cgroups)', { skip: !isRoot && 'needs root' }, () => {
  const made: string[] = [];
  const name = `forkd-killtest-${randomBytes(4).toString('hex')}`;
  const cg = async (dir: string) => {
    await mkdir(dir);
    made.push(dir);
    return dir;
  };
  after(async () => {
    for (const d of made.reverse()) await rmdir(d).catch(() => {});
  });

  /** A pids-limited cgroup that the bomb also joins, so it cannot take the host's pids. */
  async function pidsLimit(suffix: string): Promise<string> {
    const dir = cgroupVersion() === 2 ? join(ROOT, `${name}${suffix}`) : await cg(join(ROOT, 'pids', `${name}${suffix}`));
    if (cgroupVersion() === 2 && !existsSync(dir)) await cg(dir);
    await writeFile(join(dir, 'pids.max'), String(PIDS_MAX));
    return join(dir, 'cgroup.procs');
  }

  test('v1: a fork bomb is frozen, killed and gone; the cgroup is left empty and thawed', { skip: cgroupVersion() === 2 && 'no v1 freezer on this host' }, async () => {
    const freezer = await cg(join(ROOT, 'freezer', `${name}-v1`));
    const bomb = forkBomb([await pidsLimit('-v1'), join(freezer, 'cgroup.procs')]);
    await waitFor(async () => (await tasks(freezer)) >= PIDS_MAX / 2, 10_000, 'the bomb to fill its cgroup');
    assert.equal(await killCgroupAt(freezer, false, 10_000), true);
    assert.equal(await tasks(freezer), 0);
    assert.match(await readFile(join(freezer, 'freezer.state'), 'utf8'), /^THAWED/);
    await waitFor(async () => bomb.exitCode !== null || bomb.signalCode !== null, 5_000, 'the bomb itself to be dead');
  });

  test('v2: cgroup.kill takes a fork bomb; the cgroup is left empty', { skip: !existsSync(join(UNIFIED, 'cgroup.procs')) && 'no v2 hierarchy on this host' }, async () => {
    const dir = cgroupVersion() === 2 ? join(ROOT, `${name}-v2`) : await cg(join(UNIFIED, `${name}-v2`));
    const procs = cgroupVersion() === 2 ? [await pidsLimit('-v2')] : [await pidsLimit('-v2'), join(dir, 'cgroup.procs')];
    const bomb = forkBomb(procs);
    await waitFor(async () => (await tasks(dir)) >= PIDS_MAX / 2, 10_000, 'the bomb to fill its cgroup');
    assert.equal(await killCgroupAt(dir, true, 10_000), true);
    assert.equal(await tasks(dir), 0);
    await waitFor(async () => bomb.exitCode !== null || bomb.signalCode !== null, 5_000, 'the bomb itself to be dead');
  });

  test('a cgroup that does not exist (a container whose state went) is no failure', async () => {
    assert.equal(await killCgroupAt(join(UNIFIED, `${name}-missing`), cgroupVersion() === 2, 1_000), true);
    assert.equal(await killCgroupAt(join(ROOT, 'freezer', `${name}-missing`), false, 1_000), true);
  });
});
