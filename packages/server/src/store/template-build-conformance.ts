import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TemplateBuildRecord, TemplateBuildRecords } from './template-build-records.js';

const build = (id: string, extra: Partial<TemplateBuildRecord> = {}): TemplateBuildRecord => ({
  id,
  tenant: 'acme',
  template: 'app',
  target: 'app',
  tags: ['default'],
  status: 'waiting',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

/** TemplateBuildRecords' contract, run inside each ControlStore's conformance suite. */
export function templateBuildConformance(records: () => TemplateBuildRecords): void {
  test('template builds: status moves only from the states named, with its reason; logs append in order and page', async () => {
    const r = records();
    await r.putTemplateBuild(build('bld-1'));
    assert.equal(await r.templateBuild('bld-none'), undefined);
    assert.deepEqual(await r.templateBuild('bld-1'), build('bld-1'));
    assert.equal(await r.setTemplateBuildStatus('bld-1', ['building'], 'ready', undefined, '2026-01-01T00:00:01.000Z'), false, 'not building yet');
    assert.equal(await r.setTemplateBuildStatus('bld-1', ['waiting'], 'building', undefined, '2026-01-01T00:00:02.000Z'), true);
    assert.equal(await r.setTemplateBuildStatus('bld-1', ['waiting'], 'building', undefined, '2026-01-01T00:00:03.000Z'), false, 'started once');
    await r.appendTemplateBuildLogs('bld-1', [{ timestamp: 't1', level: 'info', message: 'one' }, { timestamp: 't2', level: 'info', message: 'two', step: '1' }], '2026-01-01T00:00:04.000Z');
    await r.appendTemplateBuildLogs('bld-1', [], '2026-01-01T00:00:05.000Z');
    await r.appendTemplateBuildLogs('bld-1', [{ timestamp: 't3', level: 'error', message: 'three' }], '2026-01-01T00:00:06.000Z');
    assert.equal((await r.templateBuild('bld-1'))?.updatedAt, '2026-01-01T00:00:06.000Z');
    assert.deepEqual((await r.templateBuildLogs('bld-1', 0, 100)).map((e) => e.message), ['one', 'two', 'three']);
    assert.deepEqual(await r.templateBuildLogs('bld-1', 1, 1), [{ timestamp: 't2', level: 'info', message: 'two', step: '1' }]);
    assert.deepEqual(await r.templateBuildLogs('bld-1', 3, 10), []);
    await r.putTemplateBuild(build('bld-w1', { tenant: 'quota' }));
    await r.putTemplateBuild(build('bld-w2', { tenant: 'quota', status: 'building' }));
    await r.putTemplateBuild(build('bld-w3', { tenant: 'quota', status: 'ready' }));
    await r.putTemplateBuild(build('bld-w4', { tenant: 'quota', updatedAt: '2025-12-01T00:00:00.000Z' }));
    const since = { waiting: '2025-12-31T00:00:00.000Z', building: '2025-12-31T00:00:00.000Z' };
    assert.equal(await r.activeTemplateBuilds('quota', since), 2, 'waiting and building count; ready, and one abandoned long ago, do not');
    assert.equal(await r.activeTemplateBuilds('quota', { ...since, building: '2026-06-01T00:00:00.000Z' }), 1, 'a build silent since then was cut');
    const reason = { message: 'step 2 failed', step: '2' };
    assert.equal(await r.setTemplateBuildStatus('bld-1', ['building'], 'error', reason, '2026-01-01T00:00:07.000Z'), true);
    const done = await r.templateBuild('bld-1');
    assert.equal(done?.status, 'error');
    assert.deepEqual(done?.reason, reason);
  });

  test('template files: kept per tenant by hash, replaced by a new upload', async () => {
    const r = records();
    await r.putTemplateFile('acme', 'h1', Buffer.from('first'), '2026-01-01T00:00:00.000Z');
    await r.putTemplateFile('acme', 'h1', Buffer.from('again'), '2026-01-01T00:00:01.000Z');
    assert.equal(await r.hasTemplateFile('acme', 'h1'), true);
    assert.equal(await r.hasTemplateFile('beta', 'h1'), false, "another tenant's upload is not this one's");
    assert.deepEqual(await r.templateFile('acme', 'h1'), Buffer.from('again'));
    await r.putTemplateFile('acme', 'h2', Buffer.alloc(1000), '2026-01-01T00:00:01.000Z');
    assert.equal(await r.templateFileBytes('acme'), 1005, 'what the tenant keeps, replaced uploads counted once');
    assert.equal(await r.templateFileBytes('nobody'), 0);
    assert.equal(await r.templateFile('beta', 'h1'), undefined);
  });

  test('template tags: set (moved when set again), listed oldest first, dropped; prune forgets old builds, logs and files', async () => {
    const r = records();
    await r.setTemplateTag({ template: 'app', tag: 'v1', tenant: 'acme', buildId: 'bld-a', createdAt: '2026-01-01T00:00:01.000Z' });
    await r.setTemplateTag({ template: 'app', tag: 'prod', tenant: 'acme', buildId: 'bld-a', createdAt: '2026-01-01T00:00:02.000Z' });
    await r.setTemplateTag({ template: 'other', tag: 'v1', tenant: 'acme', buildId: 'bld-o', createdAt: '2026-01-01T00:00:02.000Z' });
    await r.setTemplateTag({ template: 'app', tag: 'v1', tenant: 'acme', buildId: 'bld-b', createdAt: '2026-01-01T00:00:03.000Z' });
    assert.deepEqual((await r.templateTags('app')).map((t) => [t.tag, t.buildId]), [['prod', 'bld-a'], ['v1', 'bld-b']]);
    assert.equal(await r.dropTemplateTags('app', ['prod', 'nope']), 1);
    assert.equal(await r.dropTemplateTags('app', []), 0);
    assert.deepEqual((await r.templateTags('app')).map((t) => t.tag), ['v1']);
    await r.putTemplateBuild(build('bld-old', { updatedAt: '2025-01-01T00:00:00.000Z' }));
    await r.appendTemplateBuildLogs('bld-old', [{ timestamp: 't', level: 'info', message: 'x' }], '2025-01-01T00:00:00.000Z');
    await r.putTemplateFile('acme', 'old', Buffer.from('x'), '2025-01-01T00:00:00.000Z');
    await r.pruneTemplateBuilds('2025-06-01T00:00:00.000Z');
    assert.equal(await r.templateBuild('bld-old'), undefined);
    assert.deepEqual(await r.templateBuildLogs('bld-old', 0, 10), []);
    assert.equal(await r.hasTemplateFile('acme', 'old'), false);
    assert.equal(await r.hasTemplateFile('acme', 'h1'), true, 'newer files stay');
    assert.notEqual(await r.templateBuild('bld-1'), undefined, 'newer builds stay');
  });
}
