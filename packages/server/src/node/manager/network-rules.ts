import { ForkdError, SetNetworkRequest, type NetworkRules, type SandboxInfo } from '@forkd/protocol';
import type { ManagerContext } from './manager-context.js';
import { toInfo } from './sandbox-info.js';

/** A create's or a change's rules, checked: domain names are refused (a later part), not ignored. */
export function parseNetwork(input: unknown): NetworkRules {
  const parsed = SetNetworkRequest.safeParse(input ?? {});
  if (!parsed.success) throw new ForkdError('INVALID_ARGUMENT', parsed.error.issues.map((i) => `network${i.path.length ? '.' + i.path.join('.') : ''}: ${i.message}`).join('; '));
  return parsed.data;
}

/**
 * Replaces a sandbox's network mode and rules: recorded (snapshots, forks,
 * rewinds and resumes keep them) and, while it runs, applied at once; the
 * next connection follows them, open ones go on.
 */
export function setNetwork(c: ManagerContext, id: string, input: unknown): Promise<SandboxInfo> {
  const rules = parseNetwork(input);
  return c.locks.exclusive(id, async () => {
    const r = await c.record(id);
    if (r.state !== 'running' && r.state !== 'paused') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    const network = rules.mode === 'none' && !rules.allowOut.length && !rules.denyOut.length ? undefined : rules;
    await c.store.setNetwork(id, network);
    if (r.state === 'running') await c.instances.setNetwork(await c.instances.key(id), rules);
    return toInfo(await c.record(id));
  });
}

/**
 * Every running sandbox's network rules made again (forkd's nftables table
 * was removed by someone else: table-watch.ts), each under its lock so a
 * rewind or a rule change in flight is not raced; failures are logged.
 */
export async function reapplyNetworks(c: ManagerContext): Promise<void> {
  for (const r of await c.store.listSandboxes()) {
    if (r.state !== 'running' || !r.network || r.network.mode === 'none') continue;
    await c.locks
      .exclusive(r.id, async () => {
        const now = await c.store.getSandbox(r.id);
        if (now?.state === 'running' && now.network) await c.instances.setNetwork(now.instance ?? now.id, now.network);
      })
      .catch((err: unknown) => c.logger.warn('network rules not applied again', { sandbox: r.id, error: String(err) }));
  }
}
