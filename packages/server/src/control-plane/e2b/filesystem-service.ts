import { posix } from 'node:path';
import { ForkdError, type FileEntry } from '@forkd/protocol';
import type { EnvdCall, RpcService, StreamMethod } from './envd-call.js';
import { ListDirRequest, MoveRequest, PathRequest, WatchDirRequest, parseMessage } from './envd-messages.js';
import { resolvePath } from './envd-paths.js';
import { entryInfo, entryWithTarget, preorder } from './entry-info.js';
import { RpcError, rpcError } from './e2b-errors.js';
import { polledWatcherMethods } from './polled-watchers.js';

/** envd's `filesystem.Filesystem` over the node contract's file calls (which run as root in the sandbox). */

const WATCH_EVENT: Record<string, string> = { create: 'EVENT_TYPE_CREATE', write: 'EVENT_TYPE_WRITE', remove: 'EVENT_TYPE_REMOVE', rename: 'EVENT_TYPE_RENAME', chmod: 'EVENT_TYPE_CHMOD' };

async function statOrUndefined(call: EnvdCall, path: string): Promise<FileEntry | undefined> {
  try {
    return await call.view.stat(call.id, path);
  } catch (err) {
    if (err instanceof ForkdError && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

async function mustStat(call: EnvdCall, path: string): Promise<FileEntry> {
  const e = await statOrUndefined(call, path);
  if (!e) throw new RpcError('not_found', `file not found: ${path}`);
  return e;
}

function path(call: EnvdCall, p: string): string {
  const r = resolvePath(p, call.user);
  call.target = r;
  return r;
}

const watchDir: StreamMethod = async (call, msg, stream, deadlineMs) => {
  let dir: string;
  let recursive: boolean;
  let includeEntry: boolean;
  try {
    const req = parseMessage(WatchDirRequest, msg);
    dir = path(call, req.path);
    recursive = req.recursive;
    includeEntry = req.includeEntry;
    const st = await mustStat(call, dir);
    if (st.type !== 'dir') throw new RpcError('invalid_argument', `path ${dir} is not a directory`);
  } catch (err) {
    stream.end(rpcError(err, call.requestId));
    return;
  }
  let handle;
  try {
    handle = await call.view.watch(call.id, dir, recursive, async (e) => {
      const type = WATCH_EVENT[e.type];
      if (!type) return;
      let entry: Record<string, unknown> | undefined;
      if (includeEntry && (e.type === 'create' || e.type === 'write' || e.type === 'chmod')) {
        const st = await statOrUndefined(call, posix.join(dir, e.name)).catch(() => undefined);
        if (st) entry = entryInfo(st, posix.join(dir, e.name));
      }
      await stream.send({ filesystem: { name: e.name, type, ...(entry ? { entry } : {}) } });
    });
  } catch (err) {
    stream.end(rpcError(err, call.requestId));
    return;
  }
  void stream.send({ start: {} });
  const unregister = call.streams.add(call.id, () => stream.abort());
  const t = deadlineMs ? setTimeout(() => stream.end(), deadlineMs) : undefined;
  t?.unref();
  stream.onClose(() => {
    if (t) clearTimeout(t);
    unregister();
    handle.close();
  });
  await handle.done.catch(() => {});
  stream.end();
};

export const filesystemService: RpcService = {
  unary: {
    ...polledWatcherMethods,
    Stat: async (call, msg) => {
      const p = path(call, parseMessage(PathRequest, msg).path);
      return { entry: await entryWithTarget(call.view, call.id, await mustStat(call, p), p) };
    },
    ListDir: async (call, msg) => {
      const req = parseMessage(ListDirRequest, msg);
      const p = path(call, req.path);
      const st = await mustStat(call, p);
      // A symlink to a directory is followed; its entries keep the requested path.
      const real = st.type === 'symlink' && st.linkTarget !== undefined ? posix.resolve(posix.dirname(p), st.linkTarget) : p;
      const target = real === p ? st : await mustStat(call, real);
      if (target.type !== 'dir') throw new RpcError('invalid_argument', `path ${p} is not a directory`);
      const entries = (await call.view.listDir(call.id, real, Math.max(1, req.depth))).filter((e) => e.path !== real);
      const rel = (e: FileEntry) => posix.relative(real, e.path);
      entries.sort((a, b) => preorder(rel(a), rel(b)));
      const out: Record<string, unknown>[] = [];
      for (const e of entries) out.push(await entryWithTarget(call.view, call.id, e, posix.join(p, rel(e))));
      return { entries: out };
    },
    MakeDir: async (call, msg) => {
      const p = path(call, parseMessage(PathRequest, msg).path);
      const st = await statOrUndefined(call, p);
      if (st?.type === 'dir') throw new RpcError('already_exists', `directory ${p} already exists`);
      if (st) throw new RpcError('invalid_argument', `path ${p} already exists and is not a directory`);
      await call.view.mkdir(call.id, p, call.user);
      return { entry: entryInfo(await mustStat(call, p), p) };
    },
    Move: async (call, msg) => {
      const req = parseMessage(MoveRequest, msg);
      const from = path(call, req.source);
      const to = resolvePath(req.destination, call.user);
      await mustStat(call, from);
      await call.view.mkdir(call.id, posix.dirname(to), call.user);
      await call.view.move(call.id, from, to);
      return { entry: await entryWithTarget(call.view, call.id, await mustStat(call, to), to) };
    },
    Remove: async (call, msg) => {
      const p = path(call, parseMessage(PathRequest, msg).path);
      try {
        await call.view.remove(call.id, p, true);
      } catch (err) {
        if (!(err instanceof ForkdError && err.code === 'NOT_FOUND')) throw err;
      }
      return {};
    },
  },
  streams: {
    WatchDir: { method: watchDir, keepalive: { keepalive: {} } },
  },
};
