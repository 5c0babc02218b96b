import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { consumeProcessEvents } from './process-events.js';

async function* events(list: unknown[]): AsyncIterable<unknown> {
  for (const e of list) yield e;
}

test('policy events: waiting and limit reach their callbacks; a refusal after waiting throws PERMISSION_DENIED', async () => {
  const seen: unknown[] = [];
  const exit = await consumeProcessEvents(
    events([
      { type: 'waiting', approvalId: 'apr-1', rule: 'sandbox:exec.requireApproval[0] "^git push"', expiresAt: '2026-01-01T00:05:00.000Z' },
      { type: 'started', pid: 7, pty: false },
      { type: 'limit', limit: 'maxOutputBytes', rule: 'sandbox:maxOutputBytes' },
      { type: 'exit', exitCode: 0, signal: 9, oomKilled: false },
    ]),
    { onWaiting: (w) => seen.push(w), onLimit: (l) => seen.push(l) },
  );
  assert.deepEqual(seen, [
    { approvalId: 'apr-1', rule: 'sandbox:exec.requireApproval[0] "^git push"', expiresAt: '2026-01-01T00:05:00.000Z' },
    { limit: 'maxOutputBytes', rule: 'sandbox:maxOutputBytes' },
  ]);
  assert.deepEqual(exit, { exitCode: 0, signal: 9, oomKilled: false });
  await assert.rejects(
    consumeProcessEvents(events([{ type: 'waiting', approvalId: 'apr-2', rule: 'r', expiresAt: 'x' }, { type: 'error', error: { code: 'PERMISSION_DENIED', message: 'denied by an approver: rule r' } }]), {}),
    (e: unknown) => e instanceof ForkdError && e.code === 'PERMISSION_DENIED',
  );
});
