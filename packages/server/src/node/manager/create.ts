import { CreateSandboxRequest, ForkdError, Limits, newSandboxId, type SandboxInfo } from '@forkd/protocol';
import type { ClaimSandbox } from '../../node-contract/node-types.js';
import type { SandboxRecord } from '../../store/store.js';
import { commitOf } from './admission.js';
import { parseNetwork } from './network-rules.js';
import type { ManagerContext } from './manager-context.js';
import { freshLifetime, toInfo } from './sandbox-info.js';
import { checkMaxima, type SandboxMaxima } from './sandbox-maxima.js';
import { span } from '../../shared/profile.js';
import { spawnDefaultsOf } from './spawn-defaults.js';

/** A new sandbox from a template: a warm-pool member adopted when one is ready, else started. */
export async function createSandbox(c: ManagerContext, maxima: SandboxMaxima, input: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo> {
  const parsed = CreateSandboxRequest.safeParse(input);
  if (!parsed.success) throw new ForkdError('INVALID_ARGUMENT', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  const req = parsed.data;
  if (req.network) req.network = parseNetwork(req.network);
  const template = (await c.templates.has(req.template)) ? await c.templates.get(req.template) : undefined;
  if (!template) throw new ForkdError('NOT_FOUND', `template ${req.template} not found`);
  const space = c.space.checkFree('create a sandbox');
  const limits = Limits.parse({ memoryMb: req.memoryMb, cpus: req.cpus, pids: req.pids, diskMb: req.diskMb ?? c.space.defaultDiskMb });
  checkMaxima(limits, maxima);
  // Admitted, then recorded: the ticket holds the room until the record does (see AdmissionGate).
  // Its ids are the cold id's: a warm member's record counts twice for the moment between insert and release (errs on refusing).
  const coldId = newSandboxId();
  const ticket = await span('create: admission', () => c.admission.admit({ memory: commitOf(limits), disk: { mb: c.space.diskMbOf(limits), space }, ids: [coldId] }));
  let warm: string | undefined;
  let rec: SandboxRecord;
  try {
    // A warm sandbox already has its id (its hostname, volume and container are keyed by it).
    warm = c.pool.take(template);
    rec = {
      id: warm ?? coldId,
      template: req.template,
      templateId: template.id,
      state: 'creating',
      limits,
      // An image template's Env under the request's own.
      env: { ...template.image?.env, ...req.env },
      ...(spawnDefaultsOf(template.image) ? { defaults: spawnDefaultsOf(template.image) } : {}),
      metadata: req.metadata ?? {},
      createdAt: new Date().toISOString(),
      ...(req.network && req.network.mode !== 'none' ? { network: req.network } : {}),
      ...(req.snapshotIntervalSeconds !== undefined || req.idleTimeoutSeconds !== undefined || req.timeoutSeconds || req.onTimeout || req.timeoutPauseMemory === false
        ? {
            policy: freshLifetime({
              snapshotIntervalSeconds: req.snapshotIntervalSeconds,
              idleTimeoutSeconds: req.idleTimeoutSeconds,
              timeoutSeconds: req.timeoutSeconds || undefined,
              onTimeout: req.onTimeout,
              ...(req.timeoutPauseMemory === false ? { timeoutPauseMemory: false as const } : {}),
            }),
          }
        : {}),
    };
    try {
      await claim?.(rec.id);
    } catch (err) {
      if (warm) await c.release(warm).catch(() => {});
      throw err;
    }
    // Listed from here on (as creating): a delete by id waits for the start to finish.
    await span('create: record', () => c.store.insertSandbox(rec));
  } finally {
    ticket.release();
  }
  const created = rec;
  return c.locks.exclusive(created.id, async () => {
    try {
      const idmap = warm ? await c.instances.adopt(created) : await c.instances.start(created.id, created.template, limits, created.network);
      await c.instances.recordIdmap(created, idmap);
      await span('create: running', () => c.transition(created, 'running'));
      c.markActive(created.id);
      c.logger.info('sandbox created', { sandbox: created.id, template: created.template, warm: !!warm });
      return toInfo(created);
    } catch (err) {
      c.logger.warn('sandbox create failed', { sandbox: created.id, error: (err as Error).message });
      await c.abandon(created.id);
      throw err;
    }
  });
}
