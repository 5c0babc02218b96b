import { constants as osConstants } from 'node:os';
import type { Context } from 'hono';
import { AttachQuery, ExecEvent, ExecRequest, ForkdError, parseProcessSelector, ProcessInfo, resumeOf, SignalRequest, StdinRequest } from '@forkd/protocol';
import type { AppEnv } from '../app-env.js';
import { spawnOptions, type ProcessSelector } from '../../../node-contract/index.js';
import { signalNumber } from '../process-request.js';
import { processStream } from './process-stream.js';
import { checkGrantPolicy } from './grant-policy.js';
import { list, none, ok, param, route, view as v } from './route.js';

function selector(c: Context<AppEnv>): ProcessSelector {
  const sel = parseProcessSelector(param(c, 'sel'));
  if (!sel) throw new ForkdError('INVALID_ARGUMENT', 'process selector must be a pid or tag:<tag>');
  return sel;
}

/** Processes: exec (streamed or in the background), list, re-attach, signals and stdin. */
export const PROCESS_ROUTES = [
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/exec',
    summary: 'Run a command; output streams as NDJSON (background: returns the pid at once)',
    body: ExecRequest,
    ndjson: ExecEvent,
    handler: async (c, deps, input) => {
      const { secrets } = deps;
      const id = param(c, 'id');
      const req = await input.body();
      const { grants, ...spawnReq } = req;
      const opts = spawnOptions({ ...spawnReq, stdin: req.stdin || req.stdinData !== undefined });
      c.set('target', opts.argv.join(' '));
      const view = v(c);
      let release: (() => Promise<void>) | undefined;
      if (grants?.length) {
        // A background process outlives its call: a per-call grant would have no end.
        if (req.background) throw new ForkdError('INVALID_ARGUMENT', 'per-call grants need a foreground exec (not background)');
        await view.get(id);
        for (const g of grants) await checkGrantPolicy(c, deps, id, g);
        release = await secrets.callGrants(c.get('who').tenant, id, grants);
      }
      if (req.background) {
        const { process } = await view.spawn(id, opts);
        process.detach();
        return c.json({ pid: process.pid, ...(process.tag ? { tag: process.tag } : {}) }, 201);
      }
      return processStream(
        c,
        (h) => view.spawn(id, opts, h),
        async (p) => {
          if (req.stdinData !== undefined) await view.writeStdin(id, { pid: p.pid }, Buffer.from(req.stdinData, 'base64'), true);
          if (req.timeoutMs) {
            const t = setTimeout(() => void view.signal(id, { pid: p.pid }, osConstants.signals.SIGKILL).catch(() => {}), req.timeoutMs);
            t.unref();
          }
        },
        release,
      );
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/processes',
    summary: 'List processes started through the API',
    response: ok(list('processes', ProcessInfo)),
    handler: async (c) => c.json({ processes: await v(c).listProcesses(param(c, 'id')) }),
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/processes/:sel/output',
    summary: 'Re-attach to a process (pid or tag:NAME); with token and offset, resume a stream where it was (that very spawn only)',
    query: AttachQuery,
    ndjson: ExecEvent,
    handler: (c, _deps, input) => {
      const id = param(c, 'id');
      const sel = selector(c);
      const resume = resumeOf(input.query());
      if (resume === null) throw new ForkdError('INVALID_ARGUMENT', 'give both token and offset, or neither');
      return processStream(c, (h) => v(c).attach(id, sel, h, resume));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/processes/:sel/signal',
    summary: 'Signal a process',
    body: SignalRequest,
    response: none,
    handler: async (c, _deps, input) => {
      const sel = selector(c);
      const { signal } = await input.body();
      await v(c).signal(param(c, 'id'), sel, signalNumber(signal));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/processes/:sel/stdin',
    summary: "Write to a process's stdin",
    body: StdinRequest,
    response: none,
    handler: async (c, _deps, input) => {
      const sel = selector(c);
      const r = await input.body();
      await v(c).writeStdin(param(c, 'id'), sel, r.data !== undefined ? Buffer.from(r.data, 'base64') : undefined, r.eof ?? false);
    },
  }),
];
