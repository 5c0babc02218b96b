import { z } from 'zod';
import { ForkdError, PutTenantLimitsRequest, TenantLimitsInfo, TenantName } from '@forkd/protocol';
import { tenantHoldings } from '../../quota/quota-gate.js';
import { validate } from '../validate.js';
import { ok, param, route, type RouteDeps } from './route.js';
import type { Fleet } from '../../../fleet/fleet.js';
import { renderFleetMetrics } from '../../../fleet/fleet-metrics.js';
import { checkStore } from '../../store-health.js';

/** A tenant's limits, overrides and what it uses (the usage counts operations in flight too). */
async function limitsInfo({ svc, control }: RouteDeps, tenant: string): Promise<TenantLimitsInfo> {
  return {
    tenant,
    limits: await control.quotas.limits(tenant),
    overrides: await control.quotas.overrides(tenant),
    usage: await control.quotas.usage(tenant, await tenantHoldings(svc, control.store, tenant)),
  };
}

const tenantParam = (raw: string) => validate(TenantName, raw);

/** Each node's gauges, when the API serves a fleet. */
async function fleetMetrics(fleet: Fleet): Promise<string> {
  const nodes = await fleet.nodes.all();
  const placed = new Map(await Promise.all(nodes.map(async (n) => [n.id, (await fleet.service.store.placedOn('sandbox', n.id)).length] as const)));
  return renderFleetMetrics(nodes, placed, Date.now(), fleet.nodes.deadlineMs) + fleet.counters.render();
}

/**
 * The operator's side: liveness, Prometheus metrics, and tenants' limits.
 * Admin keys set any tenant's limits (a tenant raising its own would make
 * them no limits); every key reads its own tenant's, with what it uses, so a
 * client can tell how close it is before it is refused.
 */
export const ADMIN_ROUTES = [
  route({
    method: 'get',
    path: '/v1/health',
    summary: "Health: the API answers and its database answers a trivial query within 2 s (503 UNAVAILABLE otherwise)",
    response: ok(z.object({ ok: z.boolean() })),
    public: true,
    handler: async (c, { control }) => {
      await checkStore(control.store);
      return c.json({ ok: true });
    },
  }),
  // Prometheus scrapes with an admin key (`authorization: Bearer`): the numbers span every tenant.
  route({
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics (admin keys only)',
    undocumented: true,
    handler: async (c, { svc, control, metrics, caller, fleet }) => {
      const who = await caller(c);
      if (!who.admin) throw new ForkdError('PERMISSION_DENIED', 'metrics need an admin key');
      const text = metrics.render(await svc.list(), await svc.stats(), { owners: await control.store.owners('sandbox') }) + (fleet ? await fleetMetrics(fleet) : '');
      return c.text(text, 200, { 'content-type': 'text/plain; version=0.0.4' });
    },
  }),
  route({
    method: 'get',
    path: '/v1/tenants/:tenant/limits',
    summary: "A tenant's limits and what it uses (admin keys: any tenant; others: their own)",
    response: ok(TenantLimitsInfo),
    handler: async (c, deps) => {
      const tenant = tenantParam(param(c, 'tenant'));
      const who = c.get('who');
      if (tenant !== who.tenant && !who.admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key reads another tenant\'s limits');
      return c.json(await limitsInfo(deps, tenant));
    },
  }),
  route({
    method: 'put',
    path: '/v1/tenants/:tenant/limits',
    summary: "Replace a tenant's limit overrides (admin keys only): a number sets, null removes, absent means the server's default",
    body: PutTenantLimitsRequest,
    response: ok(TenantLimitsInfo),
    handler: async (c, deps, input) => {
      const tenant = tenantParam(param(c, 'tenant'));
      if (!c.get('who').admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key sets tenant limits');
      const req = await input.body();
      await deps.control.quotas.setOverrides(tenant, req);
      return c.json(await limitsInfo(deps, tenant));
    },
  }),
];
