import { test } from 'node:test';
import assert from 'node:assert/strict';
import { criuError } from './runc-checkpoint.js';

test("criuError: the error that failed CRIU, not its teardown's fallout after the FAILED line", () => {
  const log = [
    '(00.000777) Error (criu/util.c:1534): rlimit: Can\'t setup RLIMIT_NOFILE for self: Operation not permitted',
    '(00.002208) cg: cgroud: Daemon started',
    '(00.011271)      1: Error (criu/mount-v2.c:319): mnt-v2: Failed to open_tree /sys/fs/cgroup/cpuset/forkd/sbx-x: Permission denied',
    '(00.012806) Error (criu/cr-restore.c:2331): Restoring FAILED.',
    '(00.013602) Error (criu/cgroup.c:2055): cg: cgroupd: recv req error: No such file or directory',
  ].join('\n');
  assert.equal(criuError(log), '1: Error (criu/mount-v2.c:319): mnt-v2: Failed to open_tree /sys/fs/cgroup/cpuset/forkd/sbx-x: Permission denied');
  assert.equal(criuError('(0.1) Error (a.c:1): first\n(0.2) Error (b.c:2): second\n'), 'Error (b.c:2): second', 'no FAILED line: the last');
  assert.equal(criuError('(0.1) Error (cr-dump.c:9): Dumping FAILED.\n'), 'Error (cr-dump.c:9): Dumping FAILED.', 'nothing before it: the last');
  assert.equal(criuError(''), '');
});
