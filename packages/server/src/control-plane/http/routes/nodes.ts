import { z } from 'zod';
import { DrainResult, ForkdError, MigrateSandboxRequest, MigrationInfo, NodeHeartbeatRequest, NodeId, NodeInfo, toForkdError } from '@forkd/protocol';
import { migrateSandbox } from '../../../fleet/migrate.js';
import { presentsToken } from '../../../node-http/node-token.js';
import type { Fleet } from '../../../fleet/fleet.js';
import type { NodeRecord } from '../../../fleet/fleet-store.js';
import { validate } from '../validate.js';
import { ok, param, route, type RouteDeps } from './route.js';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';

function fleetOf({ fleet }: RouteDeps): Fleet {
  if (!fleet) throw new ForkdError('FAILED_PRECONDITION', 'this control plane serves one node, not a fleet (start it without --node to let nodes join)');
  return fleet;
}

function admin(c: Context<AppEnv>): void {
  if (!c.get('who').admin) throw new ForkdError('PERMISSION_DENIED', 'nodes are for admin keys only');
}

async function info(fleet: Fleet, n: NodeRecord): Promise<NodeInfo> {
  const { sealedToken: _, ...rest } = n;
  return { ...rest, sandboxes: (await fleet.service.store.placedOn('sandbox', n.id)).length };
}

async function nodeOr404(fleet: Fleet, raw: string): Promise<NodeRecord> {
  const n = await fleet.service.store.node(validate(NodeId, raw));
  if (!n) throw new ForkdError('NOT_FOUND', `node ${raw} not found`);
  return n;
}

/**
 * The fleet: nodes join and report by heartbeat (the join token, not an API
 * key: a node is not a tenant), admins list, drain and remove them.
 */
export const NODE_ROUTES = [
  route({
    method: 'post',
    path: '/v1/fleet/heartbeat',
    summary: "A node joins the fleet or reports its capacity (authorization: Bearer <the control plane's join.token>)",
    body: NodeHeartbeatRequest,
    // 10,000 template names of 64 characters are ~700 KB: every node posts this every few seconds, so a larger one is refused unread.
    maxBodyBytes: 1024 * 1024,
    response: ok(z.object({ state: z.string() })),
    public: true,
    handler: async (c, deps, input) => {
      const fleet = fleetOf(deps);
      const source = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown';
      deps.control.keys.throttle.check(source);
      if (!presentsToken(c.req.header('authorization'), fleet.joinToken)) {
        deps.control.keys.throttle.failed(source);
        throw new ForkdError('UNAUTHENTICATED', 'a node joins with the control plane\'s join token');
      }
      const rec = await fleet.nodes.heartbeat(await input.body());
      return c.json({ state: rec.state });
    },
  }),
  route({
    method: 'get',
    path: '/v1/nodes',
    summary: 'The nodes of the fleet (admin keys only)',
    response: ok(z.object({ nodes: z.array(NodeInfo) })),
    handler: async (c, deps) => {
      admin(c);
      const fleet = fleetOf(deps);
      return c.json({ nodes: await Promise.all((await fleet.nodes.all()).map((n) => info(fleet, n))) });
    },
  }),
  route({
    method: 'post',
    path: '/v1/nodes/:node/drain',
    summary: 'Drain a node: it takes no new sandboxes, and every sandbox on it moves to another node (admin keys only)',
    response: ok(DrainResult),
    handler: async (c, deps) => {
      admin(c);
      const fleet = fleetOf(deps);
      const n = await nodeOr404(fleet, param(c, 'node'));
      await fleet.service.store.setNodeState(n.id, 'draining');
      const moved: MigrationInfo[] = [];
      const failed: DrainResult['failed'] = [];
      for (const id of await fleet.service.store.placedOn('sandbox', n.id)) {
        try {
          moved.push(await migrateSandbox(fleet.service, id, { logger: deps.logger }));
        } catch (err) {
          const e = toForkdError(err);
          failed.push({ sandbox: id, code: e.code, message: e.message });
        }
      }
      return c.json({ node: await info(fleet, { ...n, state: 'draining' }), moved, failed });
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/migrate',
    summary: 'Move a sandbox to another node under the same id: processes, memory and files (admin keys only)',
    body: MigrateSandboxRequest,
    response: ok(MigrationInfo),
    handler: async (c, deps, input) => {
      admin(c);
      const fleet = fleetOf(deps);
      const req = await input.body();
      return c.json(await migrateSandbox(fleet.service, param(c, 'id'), { to: req.node, logger: deps.logger }));
    },
  }),
  route({
    method: 'delete',
    path: '/v1/nodes/:node',
    summary: 'Forget a node (admin keys only); refused while sandboxes are placed on it unless it is lost',
    response: { status: 204 },
    handler: async (c, deps) => {
      admin(c);
      const fleet = fleetOf(deps);
      const n = await nodeOr404(fleet, param(c, 'node'));
      const held = (await fleet.service.store.placedOn('sandbox', n.id)).length;
      if (held > 0 && n.state !== 'lost') throw new ForkdError('FAILED_PRECONDITION', `node ${n.id} holds ${held} sandboxes: drain it first`, { sandboxes: held });
      await fleet.service.store.removeNode(n.id);
      return undefined;
    },
  }),
];
