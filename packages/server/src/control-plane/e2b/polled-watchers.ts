import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { WatchHandle } from '../../node-contract/index.js';
import type { EnvdCall, UnaryMethod } from './envd-call.js';
import { WatchDirRequest, parseMessage } from './envd-messages.js';
import { resolvePath } from './envd-paths.js';
import { entryInfo } from './entry-info.js';
import { RpcError } from './e2b-errors.js';
import { z } from 'zod';
import { UnreadEvents, type EventQueue } from './unread-events.js';

/**
 * envd's polled watchers (CreateWatcher, GetWatcherEvents, RemoveWatcher):
 * not used by the JS SDK, but by clients that cannot hold a stream open. Each
 * buffers its events until the next poll; bounded, and dropped with its
 * sandbox.
 */

const MAX_PER_SANDBOX = 100;
/** Watchers on the node (all sandboxes): each holds a watch in its sandbox's agent. */
export const MAX_WATCHERS = 1000;
/**
 * Unread events: at most 1,000 or 1 MiB per watcher and 64 MiB in all (without
 * them, 100 watchers × 10,000 events of ~4 KB per sandbox, and no bound in all).
 */
export const unreadEvents = new UnreadEvents({ perWatcherEvents: 1000, perWatcherBytes: 1024 * 1024, totalBytes: 64 * 1024 * 1024 });
const WATCH_EVENT: Record<string, string> = { create: 'EVENT_TYPE_CREATE', write: 'EVENT_TYPE_WRITE', remove: 'EVENT_TYPE_REMOVE', rename: 'EVENT_TYPE_RENAME', chmod: 'EVENT_TYPE_CHMOD' };

interface Watcher {
  sandboxId: string;
  handle: WatchHandle;
  events: EventQueue;
  unregister: () => void;
}

const watchers = new Map<string, Watcher>();
/** CreateWatcher calls under way, per sandbox. */
const creating = new Map<string, number>();

const WatcherRequest = z.preprocess((v) => (v && typeof v === 'object' ? { ...v, watcherId: (v as Record<string, unknown>).watcherId ?? (v as Record<string, unknown>).watcher_id } : v), z.looseObject({ watcherId: z.string().default('') }));

function owned(call: EnvdCall, msg: unknown): [string, Watcher] {
  const { watcherId } = parseMessage(WatcherRequest, msg);
  const w = watchers.get(watcherId);
  if (!w || w.sandboxId !== call.id) throw new RpcError('not_found', `watcher with id ${watcherId} not found`);
  return [watcherId, w];
}

function drop(id: string): void {
  const w = watchers.get(id);
  if (!w) return;
  watchers.delete(id);
  w.events.close();
  w.unregister();
  w.handle.close();
}

async function createWatcher(call: EnvdCall, dir: string, req: z.infer<typeof WatchDirRequest>): Promise<{ watcherId: string }> {
  const st = await call.view.stat(call.id, dir).catch((err: unknown) => {
    if (err instanceof ForkdError && err.code === 'NOT_FOUND') throw new RpcError('not_found', `path ${dir} not found`);
    throw err;
  });
  if (st.type !== 'dir') throw new RpcError('invalid_argument', `path ${dir} is not a directory`);
  const watcherId = `w${randomBytes(15).toString('base64url').slice(0, 20)}`;
  const events = unreadEvents.queue();
  const handle = await call.view.watch(call.id, dir, req.recursive, async (e) => {
    const type = WATCH_EVENT[e.type];
    if (!type) return;
    let entry: Record<string, unknown> | undefined;
    if (req.includeEntry && (e.type === 'create' || e.type === 'write' || e.type === 'chmod')) {
      const s = await call.view.stat(call.id, posix.join(dir, e.name)).catch(() => undefined);
      if (s) entry = entryInfo(s, posix.join(dir, e.name));
    }
    events.push({ name: e.name, type, ...(entry ? { entry } : {}) });
  });
  const unregister = call.streams.add(call.id, () => drop(watcherId));
  watchers.set(watcherId, { sandboxId: call.id, handle, events, unregister });
  void handle.done.finally(() => drop(watcherId)).catch(() => {});
  return { watcherId };
}

export const polledWatcherMethods: Record<string, UnaryMethod> = {
  CreateWatcher: async (call, msg) => {
    const req = parseMessage(WatchDirRequest, msg);
    const dir = resolvePath(req.path, call.user);
    call.target = dir;
    // Counted with the ones still being made: calls at once must not all pass the check.
    const made = creating.get(call.id) ?? 0;
    if ([...watchers.values()].filter((w) => w.sandboxId === call.id).length + made >= MAX_PER_SANDBOX) throw new RpcError('resource_exhausted', `at most ${MAX_PER_SANDBOX} watchers per sandbox`);
    if (watchers.size + [...creating.values()].reduce((a, b) => a + b, 0) >= MAX_WATCHERS) throw new RpcError('resource_exhausted', `at most ${MAX_WATCHERS} watchers on this node`);
    creating.set(call.id, made + 1);
    try {
      return await createWatcher(call, dir, req);
    } finally {
      const n = (creating.get(call.id) ?? 1) - 1;
      if (n > 0) creating.set(call.id, n);
      else creating.delete(call.id);
    }
  },
  GetWatcherEvents: async (call, msg) => {
    const [, w] = owned(call, msg);
    return { events: w.events.take() };
  },
  RemoveWatcher: async (call, msg) => {
    const [id] = owned(call, msg);
    drop(id);
    return {};
  },
};
