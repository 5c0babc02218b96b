import { ForkdError, PutTemplateNetworkRequest, PutTenantNetworkRequest, TemplateNetworkInfo, TenantName, TenantNetworkInfo } from '@forkd/protocol';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { NetworkPolicies } from '../../network/network-policies.js';
import { templateScope } from '../../template-scope.js';
import { validate } from '../validate.js';
import { ok, param, route, view as v, type RouteDeps } from './route.js';

const policies = ({ control }: RouteDeps) => new NetworkPolicies(control.store);

/**
 * Network defaults and limits. A tenant's policy is the operator's (admin
 * keys set it; a tenant setting its own would make it no limit); every key
 * reads its own tenant's. A template's default network is set by its owner
 * (admin keys for the shared ones, per tenant) and read by whoever sees the
 * template (see templateScope).
 */
export const NETWORK_POLICY_ROUTES = [
  route({
    method: 'get',
    path: '/v1/tenants/:tenant/network',
    summary: "A tenant's network policy: default network, egress allowed, forced denials, maximum bandwidth and connections",
    response: ok(TenantNetworkInfo),
    handler: async (c, deps) => {
      const tenant = validate(TenantName, param(c, 'tenant'));
      const who = c.get('who');
      if (tenant !== who.tenant && !who.admin) throw new ForkdError('PERMISSION_DENIED', "only an admin key reads another tenant's network policy");
      return c.json({ tenant, policy: await policies(deps).tenant(tenant) });
    },
  }),
  route({
    method: 'put',
    path: '/v1/tenants/:tenant/network',
    summary: "Replace a tenant's network policy (admin keys only); {} removes it",
    body: PutTenantNetworkRequest,
    response: ok(TenantNetworkInfo),
    handler: async (c, deps, input) => {
      const tenant = validate(TenantName, param(c, 'tenant'));
      if (!c.get('who').admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key sets a tenant network policy');
      const req = await input.body();
      await policies(deps).setTenant(tenant, req);
      return c.json({ tenant, policy: await policies(deps).tenant(tenant) });
    },
  }),
  route({
    method: 'get',
    path: '/v1/templates/:name/network',
    summary: "A template's default network (null: none); a shared template's is per tenant (`?tenant=`: admin keys)",
    response: ok(TemplateNetworkInfo),
    handler: async (c, deps) => {
      const name = param(c, 'name');
      const key = await templateScope(v(c), deps.control.store, c.get('who'), name, { write: false, what: 'default network', tenant: tenantQuery(c) });
      return c.json({ template: name, network: (await policies(deps).template(key)) ?? null });
    },
  }),
  route({
    method: 'put',
    path: '/v1/templates/:name/network',
    summary: "Set a template's default network, used by creates from it that name none (its owner; admin keys for shared templates, per tenant); null removes it",
    body: PutTemplateNetworkRequest,
    response: ok(TemplateNetworkInfo),
    handler: async (c, deps, input) => {
      const name = param(c, 'name');
      const key = await templateScope(v(c), deps.control.store, c.get('who'), name, { write: true, what: 'default network', tenant: tenantQuery(c) });
      const req = await input.body();
      await policies(deps).setTemplate(key, req.network ?? undefined);
      return c.json({ template: name, network: (await policies(deps).template(key)) ?? null });
    },
  }),
];

/** `?tenant=`: which tenant's setting of a shared template (admin keys; see templateScope). */
function tenantQuery(c: Context<AppEnv>): string | undefined {
  const t = c.req.query('tenant');
  return t === undefined ? undefined : validate(TenantName, t);
}
