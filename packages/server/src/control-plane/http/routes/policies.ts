import type { Context } from 'hono';
import { ApprovalInfo, ForkdError, PolicyAnswer, PolicyDocument, TenantName, type PolicyScope } from '@forkd/protocol';
import type { AppEnv } from '../app-env.js';
import { checkLinear } from '../../policy/linear-regexp.js';
import { policyPatterns } from '../../policy/policy-evaluator.js';
import { policyRuntime } from '../caller-view.js';
import { validate } from '../validate.js';
import { list, ok, param, route, view, type RouteDeps } from './route.js';

/**
 * Who may set (and read) the policy at a scope: a tenant's own keys its
 * sandboxes'; the template's owner (or admin keys, alone for shared
 * templates) a template's; admin keys a tenant's (a tenant lifting its own
 * would make it no policy; its keys may read it).
 */
async function scopeId(c: Context<AppEnv>, { control }: RouteDeps, scope: PolicyScope, write: boolean): Promise<string> {
  const who = c.get('who');
  if (scope === 'sandbox') {
    const id = param(c, 'id');
    await view(c).get(id);
    return id;
  }
  if (scope === 'tenant') {
    const tenant = validate(TenantName, param(c, 'tenant'));
    if (!who.admin && (write || tenant !== who.tenant)) throw new ForkdError('PERMISSION_DENIED', write ? "only an admin key sets a tenant's policy" : "only an admin key reads another tenant's policy");
    return tenant;
  }
  const name = param(c, 'name');
  if (!(await view(c).templates()).some((t) => t.name === name)) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
  const owner = await control.store.owner('template', name);
  if (write && !who.admin && owner !== who.tenant) throw new ForkdError('PERMISSION_DENIED', `only an admin key sets the policy of shared template ${name}`);
  return name;
}

function policyRoutes(scope: PolicyScope, path: string, what: string) {
  return [
    route({
      method: 'get',
      path,
      summary: `The per-call policy of ${what} ({} when none)`,
      response: ok(PolicyAnswer),
      handler: async (c, deps) => {
        const id = await scopeId(c, deps, scope, false);
        return c.json({ scope, id, policy: (await deps.control.store.policy(scope, id)) ?? {} });
      },
    }),
    route({
      method: 'put',
      path,
      summary: `Replace the per-call policy of ${what} ({} removes it); patterns are checked here`,
      body: PolicyDocument,
      response: ok(PolicyAnswer),
      handler: async (c, deps, input) => {
        const id = await scopeId(c, deps, scope, true);
        const policy = await input.body();
        checkLinear(policyPatterns(policy));
        c.set('target', `${scope}:${id}`);
        await deps.control.store.setPolicy(scope, id, policy);
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
    handler: (c, deps) => c.json({ approvals: policyRuntime(deps.control).approvals.list(tenantFilter(c)) }),
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

function decide(c: Context<AppEnv>, deps: RouteDeps, approve: boolean) {
  const a = policyRuntime(deps.control).approvals.decide(param(c, 'id'), approve, tenantFilter(c));
  c.set('sandbox', a.sandbox);
  c.set('target', `${a.rule}: ${a.command}`);
  return c.json(a);
}
