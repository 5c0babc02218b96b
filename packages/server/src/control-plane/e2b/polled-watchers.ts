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

/**
 * envd's polled watchers (CreateWatcher, GetWatcherEvents, RemoveWatcher):
 * not used by the JS SDK, but by clients that cannot hold a stream open. Each
 * buffers its events until the next poll; bounded, and dropped with its
 * sandbox.
 */

const MAX_BUFFERED = 10_000;
const MAX_PER_SANDBOX = 100;
const WATCH_EVENT: Record<string, string> = { create: 'EVENT_TYPE_CREATE', write: 'EVENT_TYPE_WRITE', remove: 'EVENT_TYPE_REMOVE', rename: 'EVENT_TYPE_RENAME', chmod: 'EVENT_TYPE_CHMOD' };

interface Watcher {
  sandboxId: string;
  handle: WatchHandle;
  events: unknown[];
  unregister: () => void;
}

const watchers = new Map<string, Watcher>();

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
  w.unregister();
  w.handle.close();
}

export const polledWatcherMethods: Record<string, UnaryMethod> = {
  CreateWatcher: async (call, msg) => {
    const req = parseMessage(WatchDirRequest, msg);
    const dir = resolvePath(req.path, call.user);
    call.target = dir;
    if ([...watchers.values()].filter((w) => w.sandboxId === call.id).length >= MAX_PER_SANDBOX) throw new RpcError('resource_exhausted', `at most ${MAX_PER_SANDBOX} watchers per sandbox`);
    const st = await call.view.stat(call.id, dir).catch((err: unknown) => {
      if (err instanceof ForkdError && err.code === 'NOT_FOUND') throw new RpcError('not_found', `path ${dir} not found`);
      throw err;
    });
    if (st.type !== 'dir') throw new RpcError('invalid_argument', `path ${dir} is not a directory`);
    const watcherId = `w${randomBytes(15).toString('base64url').slice(0, 20)}`;
    const events: unknown[] = [];
    const handle = await call.view.watch(call.id, dir, req.recursive, async (e) => {
      const type = WATCH_EVENT[e.type];
      if (!type || events.length >= MAX_BUFFERED) return;
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
  },
  GetWatcherEvents: async (call, msg) => {
    const [, w] = owned(call, msg);
    return { events: w.events.splice(0) };
  },
  RemoveWatcher: async (call, msg) => {
    const [id] = owned(call, msg);
    drop(id);
    return {};
  },
};
