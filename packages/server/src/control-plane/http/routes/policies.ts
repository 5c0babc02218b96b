import type { Context } from 'hono';
import { ApprovalInfo, ForkdError, PolicyAnswer, PolicyDocument, TenantName, type PolicyScope } from '@forkd/protocol';
import type { AppEnv } from '../app-env.js';
import { checkLinear } from '../../policy/linear-regexp.js';
import { policyPatterns } from '../../policy/policy-evaluator.js';
import { policyRuntime } from '../caller-view.js';
import { validate } from '../validate.js';
import { templateScope } from '../../template-scope.js';
import { list, ok, param, route, view, type RouteDeps } from './route.js';

/**
 * Who may set (and read) the policy at a scope, and the key it is stored
 * under: a tenant's own keys its sandboxes'; a template's, see
 * templateScope (per tenant and template id; `?tenant=` for admin keys on a
 * shared template); admin keys a tenant's (a tenant lifting its own would
 * make it no policy; its keys may read it). `id` is what answers show.
 */
async function scopeKey(c: Context<AppEnv>, { control }: RouteDeps, scope: PolicyScope, write: boolean): Promise<{ id: string; key: string }> {
  const who = c.get('who');
  if (scope === 'sandbox') {
    const id = param(c, 'id');
    await view(c).get(id);
    return { id, key: id };
  }
  if (scope === 'tenant') {
    const tenant = validate(TenantName, param(c, 'tenant'));
    if (!who.admin && (write || tenant !== who.tenant)) throw new ForkdError('PERMISSION_DENIED', write ? "only an admin key sets a tenant's policy" : "only an admin key reads another tenant's policy");
    return { id: tenant, key: tenant };
  }
  const name = param(c, 'name');
  const tenant = c.req.query('tenant');
  const key = await templateScope(view(c), control.store, who, name, { write, what: 'policy', tenant: tenant === undefined ? undefined : validate(TenantName, tenant) });
  return { id: name, key };
}

function policyRoutes(scope: PolicyScope, path: string, what: string) {
  return [
    route({
      method: 'get',
      path,
      summary: `The per-call policy of ${what} ({} when none)`,
      response: ok(PolicyAnswer),
      handler: async (c, deps) => {
        const { id, key } = await scopeKey(c, deps, scope, false);
        return c.json({ scope, id, policy: (await deps.control.store.policy(scope, key)) ?? {} });
      },
    }),
    route({
      method: 'put',
      path,
      summary: `Replace the per-call policy of ${what} ({} removes it); patterns are checked here`,
      body: PolicyDocument,
      response: ok(PolicyAnswer),
      handler: async (c, deps, input) => {
        const { id, key } = await scopeKey(c, deps, scope, true);
        const policy = await input.body();
        checkLinear(policyPatterns(policy));
        c.set('target', `${scope}:${id}`);
        await deps.control.store.setPolicy(scope, key, policy);
        return c.json({ scope, id, policy });
      },
    }),
  ];
}

const tenantFilter = (c: Context<AppEnv>) => (c.get('who').admin ? undefined : c.get('who').tenant);

/** Per-call policies at each scope, and the calls waiting for an approver. */
export const POLICY_ROUTES = [
  ...policyRoutes('sandbox', '/v1/sandboxes/:id/policy', 'a sandbox'),
  ...policyRoutes('template', '/v1/templates/:name/policy', 'a template'),
  ...policyRoutes('tenant', '/v1/tenants/:tenant/policy', 'a tenant'),
  route({
    method: 'get',
    path: '/v1/approvals',
    summary: "Calls waiting for approval (a tenant's keys: its own; admin keys: all)",
    response: ok(list('approvals', ApprovalInfo)),
    handler: async (c, deps) => c.json({ approvals: await policyRuntime(deps.control).approvals.list(tenantFilter(c)) }),
  }),
  route({
    method: 'post',
    path: '/v1/approvals/:id/approve',
    summary: 'Approve a waiting call: it runs',
    response: ok(ApprovalInfo),
    handler: (c, deps) => decide(c, deps, true),
  }),
  route({
    method: 'post',
    path: '/v1/approvals/:id/deny',
    summary: 'Deny a waiting call: it ends with PERMISSION_DENIED',
    response: ok(ApprovalInfo),
    handler: (c, deps) => decide(c, deps, false),
  }),
];

async function decide(c: Context<AppEnv>, deps: RouteDeps, approve: boolean) {
  const a = await policyRuntime(deps.control).approvals.decide(param(c, 'id'), approve, tenantFilter(c));
  c.set('sandbox', a.sandbox);
  c.set('target', `${a.rule}: ${a.command}`);
  return c.json(a);
}
