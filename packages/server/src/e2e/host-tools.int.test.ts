import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../shared/config.js';
import { exec } from '../shared/exec.js';
import { isRoot } from '../testing/test-node.js';

const TESTS = join(REPO_ROOT, 'packages/host-tools/test');

/**
 * The host tools' own tests on the real thing (see their README): forkd-dedupe
 * on a Btrfs loop filesystem (matching, moved pages, repack, refusals),
 * forkd-shared-ranges on one (reflinks, rewritten pages, compressed extents),
 * forkd-criu-version on both ends of a real socketpair, its relay between a
 * played runc and CRIU on a real freezer, libforkd-uffd's
 * connect wait on real sockets,
 * forkd-qgroup's lineage groups under simple quotas, and
 * forkd-criu-action playing CRIU's pre-dump and post-dump on a real freezer.
 */
describe('host tools: their own real-filesystem tests', { skip: !isRoot && 'needs root' }, () => {
  test('forkd-dedupe on Btrfs (test/btrfs.sh)', async () => {
    const work = await mkdtemp(join(tmpdir(), 'forkd-dedupe-test-'));
    try {
      const r = await exec('bash', [join(TESTS, 'btrfs.sh'), join(work, 'w')], { allowFailure: true, timeoutMs: 300_000 });
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /ALL OK/);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  test('forkd-shared-ranges finds equal bytes from extent items, never a shared extent entered elsewhere (test/shared-ranges.sh)', async () => {
    const work = await mkdtemp(join(tmpdir(), 'forkd-shared-ranges-test-'));
    try {
      const r = await exec('bash', [join(TESTS, 'shared-ranges.sh'), join(work, 'w')], { allowFailure: true, timeoutMs: 120_000 });
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /ALL OK/);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  test('forkd-criu-version answers only the version probe, and installed as criu launches CRIU (test/criu-version.sh)', async () => {
    const r = await exec('bash', [join(TESTS, 'criu-version.sh')], { allowFailure: true, timeoutMs: 60_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /ALL OK/);
  });

  test("criu's relay does forkd's dump steps at CRIU's notifications and passes every message on (test/criu-relay.sh)", async () => {
    const r = await exec('bash', [join(TESTS, 'criu-relay.sh')], { allowFailure: true, timeoutMs: 120_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /ALL OK/);
  });

  test("libforkd-uffd waits for a lazy-pages daemon's socket only, and only when asked (test/uffd-preload.sh)", async () => {
    const r = await exec('bash', [join(TESTS, 'uffd-preload.sh')], { allowFailure: true, timeoutMs: 60_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /ALL OK/);
  });

  test('forkd-qgroup lineage groups under simple quotas (test/qgroup.sh)', async () => {
    const work = await mkdtemp(join(tmpdir(), 'forkd-qgroup-test-'));
    try {
      const r = await exec('bash', [join(TESTS, 'qgroup.sh'), join(work, 'w')], { allowFailure: true, timeoutMs: 300_000 });
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /ALL OK|SKIP/);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  test('forkd-criu-action on a real freezer (test/criu-action.sh)', async () => {
    const r = await exec('bash', [join(TESTS, 'criu-action.sh')], { allowFailure: true, timeoutMs: 300_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stdout, /FAIL/);
  });
});
