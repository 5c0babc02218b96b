import type { Hono } from 'hono';
import { ForkdError, PutTenantLimitsRequest, TenantName, type TenantLimitsInfo } from '@forkd/protocol';
import type { ControlPlane } from '../control-plane.js';
import { tenantHoldings } from '../quota/quota-gate.js';
import type { AppEnv } from './app.js';
import { jsonBody } from './json-body.js';
import type { SandboxService } from './sandbox-service.js';
import { validate } from './validate.js';

/**
 * Tenants' limits. Admin keys set any tenant's (a tenant raising its own
 * would make them no limits); every key reads its own tenant's, with what it
 * uses, so a client can tell how close it is before it is refused.
 */
export function mountTenantRoutes(app: Hono<AppEnv>, control: ControlPlane, svc: SandboxService): void {
  const info = (tenant: string): TenantLimitsInfo => ({
    tenant,
    limits: control.quotas.limits(tenant),
    overrides: control.quotas.overrides(tenant),
    usage: control.quotas.usage(tenant, tenantHoldings(svc, control.store, tenant)),
  });
  const tenantParam = (raw: string) => validate(TenantName, raw);

  app.get('/v1/tenants/:tenant/limits', (c) => {
    const tenant = tenantParam(c.req.param('tenant'));
    const who = c.get('who');
    if (tenant !== who.tenant && !who.admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key reads another tenant\'s limits');
    return c.json(info(tenant));
  });
  app.put('/v1/tenants/:tenant/limits', async (c) => {
    const tenant = tenantParam(c.req.param('tenant'));
    if (!c.get('who').admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key sets tenant limits');
    const req = validate(PutTenantLimitsRequest, await jsonBody(c));
    control.quotas.setOverrides(tenant, req);
    return c.json(info(tenant));
  });
}
