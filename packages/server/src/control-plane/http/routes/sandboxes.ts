import { z } from 'zod';
import { CreateSandboxRequest, ForkdError, ListSandboxesQuery, PauseRequest, ResumeRequest, SandboxInfo, SandboxMetrics, SetNetworkRequest, SetTimeoutRequest } from '@forkd/protocol';
import { listPage } from '../list-sandboxes.js';
import { none, ok, param, route, view as v } from './route.js';

/** Sandboxes: create, read, list, delete, pause and resume, lifetime, network and resource usage. */
export const SANDBOX_ROUTES = [
  route({
    method: 'post',
    path: '/v1/sandboxes',
    summary: 'Create a sandbox',
    body: CreateSandboxRequest,
    response: ok(SandboxInfo, 201),
    handler: async (c, _deps, input) => {
      const req = await input.body();
      const created = await v(c).create(req);
      c.set('sandbox', created.id);
      return c.json(created, 201);
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes',
    summary: 'List sandboxes (filters: state, metadata; paged by cursor)',
    query: ListSandboxesQuery,
    response: ok(z.object({ sandboxes: z.array(SandboxInfo), nextCursor: z.string().optional() })),
    handler: async (c, { svc, control }, input) => {
      const q = input.query();
      if (q.allTenants !== 'true') return c.json(listPage(await v(c).list(), q));
      if (!c.get('who').admin) throw new ForkdError('PERMISSION_DENIED', 'allTenants needs an admin key');
      // The unscoped service: every tenant's, each labelled (unowned ones are the operator's: no label).
      const owners = await control.store.owners('sandbox');
      return c.json(listPage((await svc.list()).map((s) => (owners.has(s.id) ? { ...s, tenant: owners.get(s.id)! } : s)), q));
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id',
    summary: 'Get a sandbox',
    response: ok(SandboxInfo),
    handler: async (c) => c.json(await v(c).get(param(c, 'id'))),
  }),
  route({
    method: 'delete',
    path: '/v1/sandboxes/:id',
    summary: 'Delete a sandbox, its processes and files',
    response: none,
    handler: async (c, { secrets }) => {
      await v(c).delete(param(c, 'id'));
      await secrets.forgetSandbox(param(c, 'id'));
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/metrics',
    summary: 'Resource usage (memory, CPU, processes)',
    response: ok(SandboxMetrics),
    handler: async (c) => c.json(await v(c).metrics(param(c, 'id'))),
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/pause',
    summary: 'Pause: snapshot, then stop (no CPU or memory used); memory false: stop and keep the files only',
    body: PauseRequest,
    response: ok(SandboxInfo),
    handler: async (c, _deps, input) => {
      // Another tenant's id is NOT_FOUND whatever the body says.
      await v(c).get(param(c, 'id'));
      const r = await input.body();
      return c.json(await v(c).pause(param(c, 'id'), { memory: r.memory }));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/resume',
    summary: 'Resume a paused sandbox in place (cold from its files after a filesystem-only pause, or with memory false)',
    body: ResumeRequest,
    response: ok(SandboxInfo),
    handler: async (c, _deps, input) => {
      // Another tenant's id is NOT_FOUND whatever the body says.
      await v(c).get(param(c, 'id'));
      const r = await input.body();
      return c.json(await v(c).resume(param(c, 'id'), { memory: r.memory }));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/timeout',
    summary: 'Set the lifetime: time out this many seconds from now (0: never)',
    body: SetTimeoutRequest,
    response: ok(SandboxInfo),
    handler: async (c, _deps, input) => {
      const r = await input.body();
      return c.json(await v(c).setTimeout(param(c, 'id'), r.timeoutSeconds));
    },
  }),
  route({
    method: 'put',
    path: '/v1/sandboxes/:id/network',
    summary: 'Replace the network mode and egress rules (running: from the next connection on)',
    body: SetNetworkRequest,
    response: ok(SandboxInfo),
    handler: async (c, _deps, input) => {
      return c.json(await v(c).setNetwork(param(c, 'id'), await input.body()));
    },
  }),
];
