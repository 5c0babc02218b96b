import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { api, execHttp, type ApiTarget } from './http-client.js';

/**
 * The adversarial suite's closing check after each attack: the daemon's
 * process is alive, it answers `/v1/health`, and a neighbour sandbox (one
 * the attacker does not own) still runs a command.
 */
export async function assertStillServing(t: ApiTarget, neighbourId: string, child?: ChildProcess): Promise<void> {
  if (child) assert.equal(child.exitCode, null, 'the daemon process exited');
  const health = await api(t, 'GET', '/v1/health');
  assert.equal(health.status, 200, `health: ${health.text}`);
  const marker = `alive-${Math.random().toString(36).slice(2)}`;
  const r = await execHttp(t, neighbourId, ['echo', marker]);
  assert.deepEqual(r, { stdout: `${marker}\n`, exit: 0 });
}
