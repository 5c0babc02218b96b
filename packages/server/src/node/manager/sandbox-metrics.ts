import type { SandboxMetrics } from '@forkd/protocol';
import type { Storage } from '../storage/storage.js';
import type { ResourceUsage } from '../runtime/runtime.js';
import type { ManagerContext } from './manager-context.js';
import type { ManagerParts } from './manager-parts.js';

/** Usage plus disk; disk is measured by walking the volume (~0.2 s for 300 MB), so at most every 30 s per sandbox. */
export async function sandboxMetrics(c: ManagerContext, storage: Storage, disk: ManagerParts['diskUse'], id: string, usage: ResourceUsage): Promise<SandboxMetrics> {
  const key = await c.instances.key(id);
  let d = disk.get(id);
  if (!d || Date.now() - d.at > 30_000) {
    d = { at: Date.now(), value: await storage.diskUsage(c.instances.volumeOf(key)) };
    disk.set(id, d);
  }
  const r = await c.record(id);
  const q = await c.space.usage(c.instances.rootfsOf(key), await c.instances.templateRoot(r), r.limits.diskMb);
  return { ...usage, diskBytes: d.value.totalBytes, diskWrittenBytes: d.value.exclusiveBytes, ...(q ? { diskQuotaUsedBytes: q.usedBytes, diskQuotaBytes: q.limitBytes } : {}) };
}
