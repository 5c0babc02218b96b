import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StdinFlow } from './stdin-flow.js';

const tick = () => new Promise((r) => setImmediate(r));

test('a process that does not read: reading pauses past the bound and resumes as it drains', async () => {
  const pending: (() => void)[] = [];
  const written: string[] = [];
  const calls: string[] = [];
  const sink = {
    write: (d: Buffer) => new Promise<void>((r) => pending.push(() => (written.push(d.toString()), r()))),
    closeStdin: () => written.push('EOF'),
  };
  const flow = new StdinFlow(sink, { pause: () => calls.push('pause'), resume: () => calls.push('resume') }, 10);
  flow.write(Buffer.from('aaaa'));
  flow.write(Buffer.from('bbbb'));
  assert.deepEqual(calls, []);
  flow.write(Buffer.from('cccc'));
  flow.eof();
  assert.deepEqual(calls, ['pause'], 'past 10 bytes not taken, the socket is not read');
  assert.equal(flow.inFlight, 12);
  await tick();
  assert.equal(pending.length, 1, 'one write at a time, in order');
  pending.shift()!();
  await tick();
  assert.deepEqual(calls, ['pause', 'resume']);
  while (pending.length) {
    pending.shift()!();
    await tick();
  }
  await tick();
  assert.deepEqual(written, ['aaaa', 'bbbb', 'cccc', 'EOF'], 'EOF never overtakes data');
  assert.equal(flow.inFlight, 0);
});

test('a failed write counts as done and does not stop later ones', async () => {
  const written: string[] = [];
  let n = 0;
  const flow = new StdinFlow({ write: async (d) => { if (n++ === 0) throw new Error('gone'); written.push(d.toString()); }, closeStdin: () => {} }, { pause: () => {}, resume: () => { throw new Error('closed'); } }, 1);
  flow.write(Buffer.from('x'));
  flow.write(Buffer.from('y'));
  for (let i = 0; i < 5; i++) await tick();
  assert.deepEqual(written, ['y']);
  assert.equal(flow.inFlight, 0);
});
