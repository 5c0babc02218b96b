import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';
import { TOKEN_SERVER } from '../../testing/token-server.js';

describe('templates: build with setup commands and a start command (warm)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(async () => node?.dispose());

  test('sandboxes from a warm template start with its processes already running', async () => {
    const progress: string[] = [];
    const t = await node.service.buildTemplate(
      { name: 'py-warm', from: 'base', setup: ['mkdir -p /app', `cat > /app/server.py <<'EOF'\n${TOKEN_SERVER}\nEOF`, 'echo built > /app/marker'], start: 'cd /app && exec python3 server.py' },
      (l) => void progress.push(l),
    );
    assert.equal(t.warm, true);
    assert.equal(t.from, 'base');
    assert.ok(progress.some((l) => l.includes('mkdir -p /app')));
    assert.ok((await node.manager.templates()).some((x) => x.name === 'py-warm' && x.warm));

    const a = await node.manager.create({ template: 'py-warm' });
    const b = await node.manager.create({ template: 'py-warm' });
    const token = async (id: string) => (await run(node.manager, id, ['curl', '-s', 'http://127.0.0.1:9000/'])).stdout;
    const ta = await waitFor(() => token(a.id), 5000, 'server in a');
    assert.match(ta, /^[0-9a-f]{16}$/);
    assert.equal(await token(b.id), ta, 'the same in-memory token: restored, not restarted');
    assert.equal((await run(node.manager, a.id, ['cat', '/app/marker'])).stdout, 'built\n');
    const procs = await (await node.manager.guest(a.id)).listProcesses();
    assert.ok(procs.some((p) => p.tag === 'start' && p.running));
    // Sandboxes from it are independent.
    await run(node.manager, a.id, 'echo only-a > /app/own');
    assert.equal((await run(node.manager, b.id, ['test', '-e', '/app/own'])).exitCode, 1);
    assert.equal((await node.manager.list()).length, 2, 'the build sandbox is gone');
  });

  test('a failing setup command fails the build and leaves nothing', async () => {
    await assert.rejects(node.service.buildTemplate({ name: 'broken', setup: ['exit 3'] }, () => {}), { code: 'FAILED_PRECONDITION' });
    assert.ok(!(await node.manager.templates()).some((x) => x.name === 'broken'));
    assert.equal((await node.manager.list()).filter((s) => s.template === 'base').length, 0);
  });

  test('a cold template (no start command) is a plain root filesystem', async () => {
    const t = await node.service.buildTemplate({ name: 'with-file', setup: ['echo hi > /etc/greeting'] }, () => {});
    assert.equal(t.warm, false);
    const s = await node.manager.create({ template: 'with-file' });
    assert.equal((await run(node.manager, s.id, ['cat', '/etc/greeting'])).stdout, 'hi\n');
    await node.manager.deleteTemplate('with-file');
    assert.equal((await run(node.manager, s.id, ['cat', '/etc/greeting'])).stdout, 'hi\n', 'sandboxes outlive their template');
    await assert.rejects(node.manager.deleteTemplate('base'), { code: 'FAILED_PRECONDITION' });
  });
});
