import { z } from 'zod';
import { CreateSnapshotRequest, ForkRequest, PinRequest, RewindRequest, SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import { list, none, ok, param, route, view as v } from './route.js';

/** Snapshots and what is made of them: timelines, pins, rewinds, forks and the fork tree. */
export const SNAPSHOT_ROUTES = [
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/snapshots',
    summary: 'Snapshot memory and files (named snapshots are pinned)',
    body: CreateSnapshotRequest,
    response: ok(SnapshotInfo, 201),
    handler: async (c, _deps, input) => {
      const r = await input.body();
      return c.json(await v(c).snapshot(param(c, 'id'), r), 201);
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/snapshots',
    summary: "The sandbox's timeline",
    response: ok(list('snapshots', SnapshotInfo)),
    handler: async (c) => c.json({ snapshots: await v(c).timeline(param(c, 'id')) }),
  }),
  route({
    method: 'get',
    path: '/v1/snapshots/:snap',
    summary: 'Get a snapshot',
    response: ok(SnapshotInfo),
    handler: async (c) => c.json(await v(c).getSnapshot(param(c, 'snap'))),
  }),
  route({
    method: 'post',
    path: '/v1/snapshots/:snap/pin',
    summary: 'Pin (never thinned) or unpin a snapshot',
    body: PinRequest,
    response: ok(SnapshotInfo),
    handler: async (c, _deps, input) => {
      const r = await input.body();
      return c.json(await v(c).pinSnapshot(param(c, 'snap'), r.pinned));
    },
  }),
  route({
    method: 'delete',
    path: '/v1/snapshots/:snap',
    summary: 'Delete a snapshot',
    response: none,
    handler: async (c) => {
      await v(c).deleteSnapshot(param(c, 'snap'));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/rewind',
    summary: 'Restore memory and files to a snapshot (the state left is snapshotted)',
    body: RewindRequest,
    response: ok(SandboxInfo),
    handler: async (c, _deps, input) => {
      const r = await input.body();
      return c.json(await v(c).rewind(param(c, 'id'), r.snapshot));
    },
  }),
  // A sandbox id forks it live (implicit snapshot); a snapshot id forks that snapshot.
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/fork',
    summary: 'Fork a live sandbox (implicit snapshot); metadata replaces the parent\'s, env is laid over it',
    body: ForkRequest,
    response: ok(list('sandboxes', SandboxInfo), 201),
    handler: async (c, _deps, input) => {
      const r = await input.body();
      return c.json({ sandboxes: await v(c).fork(param(c, 'id'), r.count, undefined, { metadata: r.metadata, env: r.env }) }, 201);
    },
  }),
  route({
    method: 'post',
    path: '/v1/snapshots/:snap/fork',
    summary: 'Fork a snapshot into new sandboxes; metadata replaces the parent\'s, env is laid over it',
    body: ForkRequest,
    response: ok(list('sandboxes', SandboxInfo), 201),
    handler: async (c, _deps, input) => {
      const r = await input.body();
      return c.json({ sandboxes: await v(c).fork(param(c, 'snap'), r.count, undefined, { metadata: r.metadata, env: r.env }) }, 201);
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/tree',
    summary: 'Lineage: the fork tree under a sandbox',
    response: ok(z.object({ sandbox: SandboxInfo, children: z.array(z.unknown()) })),
    handler: async (c) => c.json(await v(c).tree(param(c, 'id'))),
  }),
];
