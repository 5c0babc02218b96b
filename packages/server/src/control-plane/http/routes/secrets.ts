import { CreateGrantRequest, ForkdError, GRANT_ID_PATTERN, GrantInfo, SecretInfo, SecretName, SetSecretRequest } from '@forkd/protocol';
import { checkGrantPolicy } from './grant-policy.js';
import { list, none, ok, param, route, view as v } from './route.js';

function secretName(name: string): string {
  if (!SecretName.safeParse(name).success) throw new ForkdError('INVALID_ARGUMENT', `invalid secret name ${JSON.stringify(name.slice(0, 130))}`);
  return name;
}

/**
 * Just-in-time secrets: a tenant's secrets (values in, never out) and the
 * grants that let a sandbox's requests carry one. Each call's audit record
 * names the secret or grant, never a value.
 */
export const SECRET_ROUTES = [
  route({
    method: 'put',
    path: '/v1/secrets/:name',
    summary: 'Set a secret (created or replaced; stored encrypted; the value is never returned)',
    body: SetSecretRequest,
    response: ok(SecretInfo),
    handler: async (c, { secrets }, input) => {
      const name = secretName(param(c, 'name'));
      const { value } = await input.body();
      return c.json(await secrets.setSecret(c.get('who').tenant, name, value));
    },
  }),
  route({
    method: 'get',
    path: '/v1/secrets',
    summary: "List the tenant's secrets (names and times, never values)",
    response: ok(list('secrets', SecretInfo)),
    handler: async (c, { secrets }) => c.json({ secrets: await secrets.listSecrets(c.get('who').tenant) }),
  }),
  route({
    method: 'delete',
    path: '/v1/secrets/:name',
    summary: 'Remove a secret and every grant of it (at once)',
    response: none,
    handler: async (c, { secrets }) => {
      await secrets.removeSecret(c.get('who').tenant, secretName(param(c, 'name')));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/grants',
    summary: "Grant a sandbox's requests to some hosts a secret, as a header (optional methods, path prefixes, TTL)",
    body: CreateGrantRequest,
    response: ok(GrantInfo, 201),
    handler: async (c, deps, input) => {
      const { secrets } = deps;
      const id = param(c, 'id');
      // Another tenant's id is NOT_FOUND whatever the body says.
      await v(c).get(id);
      const req = await input.body();
      await checkGrantPolicy(c, deps, id, req);
      const g = await secrets.createGrant(c.get('who').tenant, id, req);
      c.set('target', `${g.id} secret=${g.secret} hosts=${g.hosts.join(',')}`);
      return c.json(g, 201);
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/grants',
    summary: "A sandbox's live grants (per-call ones included)",
    response: ok(list('grants', GrantInfo)),
    handler: async (c, { secrets }) => {
      const id = param(c, 'id');
      await v(c).get(id);
      return c.json({ grants: await secrets.listGrants(id) });
    },
  }),
  route({
    method: 'delete',
    path: '/v1/sandboxes/:id/grants/:grant',
    summary: 'Revoke a grant (the next request goes without it)',
    response: none,
    handler: async (c, { secrets }) => {
      const id = param(c, 'id');
      const grant = param(c, 'grant');
      await v(c).get(id);
      if (!GRANT_ID_PATTERN.test(grant)) throw new ForkdError('NOT_FOUND', `grant ${grant.slice(0, 40)} not found`);
      c.set('target', grant);
      await secrets.removeGrant(id, grant);
    },
  }),
];
