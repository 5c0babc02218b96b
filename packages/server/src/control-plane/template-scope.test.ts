import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../node-contract/index.js';
import { SqliteControlStore } from '../store/sqlite-control-store.js';
import { sandboxPolicies } from './policy/policy-gate.js';
import { templateKey, templateScope } from './template-scope.js';

/** A node that knows each sandbox's template (name, id) and the templates published now. */
function fakeNode(sandboxes: Record<string, [string, string]>, templates: { name: string; id: string }[]): NodeService {
  return {
    get: async (id: string) => ({ id, template: sandboxes[id]![0], templateId: sandboxes[id]![1] }) as SandboxInfo,
    templates: async () => templates,
  } as unknown as NodeService;
}

test("a sandbox's template policy is its tenant's, of the template it was made from: not a later template's of the name, not another tenant's on a shared one", async () => {
  const store = new SqliteControlStore(':memory:');
  try {
    await store.setOwner('sandbox', 'sbx-a', 'acme');
    await store.setOwner('sandbox', 'sbx-b', 'beta');
    await store.setOwner('sandbox', 'sbx-c', 'acme');
    await store.setPolicy('template', templateKey('acme', 'tpl_old'), { exec: { deny: ['^acme$'] } });
    await store.setPolicy('template', templateKey('beta', 'tpl_new'), { exec: { deny: ['.*'] } });
    await store.setPolicy('template', templateKey('beta', 'base'), { network: 'off' });
    // sbx-a: acme's, of `py` since deleted; sbx-b: beta's, of the `py` now; sbx-c: acme's, of base.
    const svc = fakeNode({ 'sbx-a': ['py', 'tpl_old'], 'sbx-b': ['py', 'tpl_new'], 'sbx-c': ['base', 'base'] }, []);
    const cache = new Map();
    assert.deepEqual(await sandboxPolicies(svc, store, 'sbx-a', cache), [{ scope: 'template', id: 'py', policy: { exec: { deny: ['^acme$'] } } }]);
    assert.deepEqual(await sandboxPolicies(svc, store, 'sbx-b', cache), [{ scope: 'template', id: 'py', policy: { exec: { deny: ['.*'] } } }]);
    assert.deepEqual(await sandboxPolicies(svc, store, 'sbx-c', cache), [], "beta's policy on the shared base is beta's only");
    assert.deepEqual(cache.get('sbx-a'), { name: 'py', id: 'tpl_old' }, 'cached by id, not name');
  } finally {
    await store.close();
  }
});

test('templateScope: an owned template is keyed to its owner, a shared one to the caller (or, for admin keys, ?tenant=); writes checked', async () => {
  const store = new SqliteControlStore(':memory:');
  try {
    await store.setOwner('template', 'py', 'acme');
    const view = fakeNode({}, [{ name: 'py', id: 'tpl_1' }, { name: 'base', id: 'base' }]);
    const acme = { tenant: 'acme', admin: false };
    const admin = { tenant: 'default', admin: true };
    const scope = (who: typeof acme, name: string, write: boolean, tenant?: string) => templateScope(view, store, who, name, { write, what: 'policy', tenant });
    assert.equal(await scope(acme, 'py', true), 'acme/tpl_1');
    assert.equal(await scope(admin, 'py', true), 'acme/tpl_1');
    assert.equal(await scope(acme, 'base', false), 'acme/base');
    assert.equal(await scope(admin, 'base', true), 'default/base');
    assert.equal(await scope(admin, 'base', true, 'beta'), 'beta/base');
    await assert.rejects(scope(acme, 'base', true), { code: 'PERMISSION_DENIED' });
    await assert.rejects(scope(acme, 'base', false, 'beta'), { code: 'PERMISSION_DENIED' });
    await assert.rejects(scope(admin, 'py', true, 'beta'), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(scope(acme, 'nope', false), { code: 'NOT_FOUND' });
  } finally {
    await store.close();
  }
});
