import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import type { PauseOptions } from '../../node-contract/node-types.js';
import type { SandboxPolicy } from '../../store/store.js';
import type { NodeEventSink } from '../node-event.js';
import type { ManagerContext } from './manager-context.js';
import { toInfo } from './sandbox-info.js';

/** Sets the sandbox's lifetime to end `seconds` from now (0: no lifetime). Returns the updated sandbox. */
export function setLifetime(c: ManagerContext, id: string, seconds: number): Promise<SandboxInfo> {
  return c.locks.exclusive(id, async () => {
    const r = await c.record(id);
    if (r.state !== 'running' && r.state !== 'paused') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    const policy: SandboxPolicy = { ...r.policy, timeoutSeconds: seconds || undefined, expiresAt: seconds ? new Date(Date.now() + seconds * 1000).toISOString() : undefined };
    await c.store.setPolicy(id, policy);
    return toInfo(await c.record(id));
  });
}

/** The lifetime ran out: pause (the lifetime is spent until a resume; filesystem-only if its policy says so) or delete. */
export async function timeOut(c: ManagerContext, id: string, pause: (id: string, opts: PauseOptions) => Promise<unknown>): Promise<void> {
  const r = await c.record(id);
  c.logger.info('sandbox timed out', { sandbox: id, onTimeout: r.policy?.onTimeout ?? 'pause' });
  if (r.policy?.onTimeout === 'kill') return c.delete(id);
  if (r.state === 'running') await pause(id, { memory: r.policy?.timeoutPauseMemory !== false });
  const now = await c.store.getSandbox(id);
  if (now?.policy) await c.store.setPolicy(id, { ...now.policy, expiresAt: undefined });
}

/** A rolling-timeline snapshot (unnamed, thinnable), if the sandbox is still running. */
export async function policySnapshot(c: ManagerContext, id: string, onEvent: NodeEventSink | undefined): Promise<void> {
  await c.locks.exclusive(id, async () => {
    const cur = await c.record(id);
    if (cur.state !== 'running') return;
    await c.takeSnapshot(cur, { reason: 'policy', leaveRunning: true }).catch((err: unknown) => {
      // A full pool skips the timeline's snapshot; the sandbox runs on and the next tick tries again.
      if (!(err instanceof ForkdError && err.code === 'RESOURCE_EXHAUSTED')) throw err;
      c.logger.warn('timeline snapshot skipped', { sandbox: id, error: err.message });
      onEvent?.({ at: new Date().toISOString(), sandboxId: id, operation: 'snapshot-skipped', detail: err.message, code: err.code, durationMs: 0 });
    });
  });
}
