import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toolNotifier, waitingMessage } from './notifier.js';

type Sent = { method: string; params: Record<string, unknown> };

function fakeExtra(progressToken?: string | number) {
  const sent: Sent[] = [];
  const extra = {
    _meta: progressToken !== undefined ? { progressToken } : undefined,
    sendNotification: async (n: Sent) => void sent.push(n),
  };
  return { sent, extra: extra as unknown as Parameters<typeof toolNotifier>[0] };
}

const wait = { approvalId: 'apr-1', rule: 'sandbox exec.requireApproval ^rm', expiresAt: '2026-12-02T00:05:00Z' };

test('the waiting message names the rule, the approval and its deadline', () => {
  assert.equal(waitingMessage(wait), 'waiting for approval (policy rule sandbox exec.requireApproval ^rm), approval apr-1, refused if not decided by 2026-12-02T00:05:00Z');
  assert.equal(waitingMessage({}), 'waiting for approval');
});

test('a wait is a progress notification when the client asked for progress, and a log message always', async () => {
  const withToken = fakeExtra('tok-7');
  await toolNotifier(withToken.extra).waiting(wait);
  assert.deepEqual(withToken.sent.map((n) => n.method), ['notifications/progress', 'notifications/message']);
  assert.equal(withToken.sent[0]!.params.progressToken, 'tok-7');
  assert.match(String(withToken.sent[1]!.params.data), /^waiting for approval/);
  const without = fakeExtra();
  await toolNotifier(without.extra).waiting(wait);
  assert.deepEqual(without.sent.map((n) => n.method), ['notifications/message']);
});

test('a client that went away does not fail the call', async () => {
  const extra = { sendNotification: async () => Promise.reject(new Error('closed')) } as unknown as Parameters<typeof toolNotifier>[0];
  await toolNotifier(extra).waiting(wait);
});
