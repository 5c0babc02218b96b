import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError, type WatchEvent } from '@forkd/protocol';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';

/** Prints 1..n, one line every `ms`. */
const printer = (n: number, ms: number) => ['/bin/sh', '-c', `i=1; while [ $i -le ${n} ]; do echo $i; i=$((i+1)); sleep ${ms / 1000}; done`];
const expectedLines = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1)).join('\n') + '\n';

/** A stream's output as it arrives, with what happened to it. */
function collector() {
  const out: Buffer[] = [];
  const events: string[] = [];
  return {
    handlers: {
      onStdout: (d: Buffer) => void out.push(d),
      onStderr: (d: Buffer) => void out.push(d),
      onDropped: (n: number) => void events.push(`dropped ${n}`),
      onRewound: () => void events.push('rewound'),
    },
    text: () => Buffer.concat(out).toString(),
    events,
  };
}

describe('client streams survive snapshots, pause/resume, hibernation and rewinds (real CRIU)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let id: string;

  before(async () => {
    node = await createTestNode();
    id = (await node.manager.create({})).id;
  });
  after(async () => node?.dispose());

  test('a foreground exec gets every line exactly once, in order, across 5 snapshots, a pause/resume and a hibernation woken by a call', async () => {
    const c = collector();
    const { exit } = await node.manager.spawn(id, { argv: printer(200, 100) }, c.handlers);
    const lines = () => c.text().split('\n').length - 1;
    for (let i = 0; i < 5; i++) {
      await waitFor(() => lines() >= 10 + i * 20, 20_000, `line ${10 + i * 20}`);
      await node.manager.snapshot(id);
    }
    await node.manager.pause(id);
    await sleep(500);
    await node.manager.resume(id);
    await waitFor(() => lines() >= 130, 20_000, 'output after the resume');
    // Hibernation is a pause by the reconciler; the next call wakes the sandbox under the stream.
    await node.manager.pause(id);
    assert.equal((await node.manager.get(id)).state, 'paused');
    assert.equal((await run(node.manager, id, ['true'])).exitCode, 0);
    const e = await exit;
    assert.deepEqual(e && { exitCode: e.exitCode, signal: e.signal }, { exitCode: 0, signal: 0 });
    assert.equal(c.text(), expectedLines(200));
    assert.deepEqual(c.events, []);
  });

  test('stdin written across snapshots reaches the process exactly once', async () => {
    const c = collector();
    const { process, exit } = await node.manager.spawn(id, { argv: ['cat'], stdin: true }, c.handlers);
    let sent = '';
    const writer = (async () => {
      for (let i = 0; i < 400; i++) {
        const line = `line-${i}-${'x'.repeat(i % 50)}\n`;
        sent += line;
        await process.write(Buffer.from(line));
        if (i % 20 === 0) await sleep(10);
      }
    })();
    for (let i = 0; i < 3; i++) await node.manager.snapshot(id);
    await writer;
    process.closeStdin();
    const e = await exit;
    assert.equal(e?.exitCode, 0);
    assert.equal(c.text(), sent);
  });

  test('a PTY session keeps its shell and its typed input across snapshots', async () => {
    const c = collector();
    const { process, exit } = await node.manager.spawn(id, { argv: ['/bin/bash', '--norc', '-i'], pty: { cols: 120, rows: 30 } }, c.handlers);
    for (let i = 1; i <= 6; i++) {
      await process.write(Buffer.from(`echo mark-$((${i}*1000))\n`));
      await node.manager.snapshot(id);
    }
    await process.write(Buffer.from('exit 7\n'));
    const e = await exit;
    assert.equal(e?.exitCode, 7);
    // The terminal's output lines (not the echoed input, which still reads $((i*1000))).
    const marks = c.text().replace(/\x1b\[[?0-9;]*[a-zA-Z]/g, '').split(/[\r\n]+/).filter((l) => /^mark-\d+$/.test(l));
    assert.deepEqual(marks, [1, 2, 3, 4, 5, 6].map((i) => `mark-${i * 1000}`), JSON.stringify(c.text()));
  });

  test('a re-attached background process streams on across snapshots', async () => {
    const { process } = await node.manager.spawn(id, { argv: printer(60, 50), tag: 'bg' });
    process.detach();
    await sleep(300);
    const c = collector();
    const { exit } = await node.manager.attach(id, { tag: 'bg' }, c.handlers);
    await node.manager.snapshot(id);
    await node.manager.snapshot(id);
    const e = await exit;
    assert.equal(e?.exitCode, 0);
    assert.equal(c.text(), expectedLines(60));
  });

  test('a watch goes on after a snapshot', async () => {
    await run(node.manager, id, 'mkdir -p /tmp/w');
    const seen: WatchEvent[] = [];
    const w = await node.manager.watch(id, '/tmp/w', false, (e) => void seen.push(e));
    await node.manager.snapshot(id);
    await waitFor(async () => {
      await run(node.manager, id, 'touch /tmp/w/after-snapshot');
      return seen.some((e) => e.name === 'after-snapshot');
    }, 10_000, 'an event after the snapshot');
    w.close();
    await w.done;
  });

  test('a rewind: a stream whose process exists in that state goes on (told so), one whose process does not ends with REWOUND', async () => {
    const old = collector();
    const { exit: oldExit } = await node.manager.spawn(id, { argv: printer(100, 100) }, old.handlers);
    await waitFor(() => old.text().includes('\n5\n'), 10_000, 'output before the snapshot');
    const snap = await node.manager.snapshot(id);
    const young = collector();
    const { exit: youngExit } = await node.manager.spawn(id, { argv: ['sleep', '60'] }, young.handlers);
    await sleep(300);
    await node.manager.rewind(id, snap.id);
    await assert.rejects(youngExit, (err: unknown) => err instanceof ForkdError && err.code === 'REWOUND');
    const e = await oldExit;
    assert.equal(e?.exitCode, 0);
    assert.deepEqual(old.events, ['rewound']);
    // Every number up to 100 arrived, the last ones once; those after the snapshot may come again from the restored state.
    const nums = old.text().trim().split('\n').map(Number);
    assert.equal(nums[nums.length - 1], 100);
    for (let i = 1; i <= 100; i++) assert.ok(nums.includes(i), `line ${i} is there`);
  });

  test('an exec and a file call asked for while a rewind is under way wait for it and run on the state rewound to', async () => {
    await run(node.manager, id, ['sh', '-c', 'echo before > /tmp/state']);
    const snap = await node.manager.snapshot(id);
    await run(node.manager, id, ['sh', '-c', 'echo after > /tmp/state']);
    const rewinding = node.manager.rewind(id, snap.id);
    // The rewind holds the sandbox once its turn comes (a microtask away): these are asked for after that.
    await sleep(0);
    const readState = async () => {
      const f = await (await node.manager.guest(id)).readFile('/tmp/state');
      const parts: Buffer[] = [];
      for await (const c of f.chunks) parts.push(c);
      return Buffer.concat(parts).toString();
    };
    const [out, file] = await Promise.all([run(node.manager, id, ['cat', '/tmp/state']), readState()]);
    await rewinding;
    assert.equal(out.stdout, 'before\n');
    assert.equal(file, 'before\n');
  });
});
