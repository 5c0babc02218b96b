import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';

describe('templates: Debian packages in an offline build, and a ready command', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(async () => node?.dispose());

  test("aptPackages: the host's apt fetches what the sandbox lacks, apt in the sandbox installs it", async () => {
    const progress: string[] = [];
    await node.service.buildTemplate({ name: 'with-jq', aptPackages: ['jq'], setup: ['jq --version > /etc/jq-version'] }, (l) => void progress.push(l));
    const fetched = progress.map((l) => /^apt: (\d+) packages fetched by the host$/.exec(l)?.[1]).find((n) => n !== undefined);
    assert.ok(Number(fetched) >= 2 && Number(fetched) <= 5, `jq and its libraries, nothing base has: ${progress.filter((l) => l.startsWith('apt:')).join(' | ')}`);
    const s = await node.manager.create({ template: 'with-jq' });
    assert.match((await run(node.manager, s.id, ['cat', '/etc/jq-version'])).stdout, /^jq-1\./);
    assert.equal((await run(node.manager, s.id, 'echo \'{"a": 7}\' | jq .a')).stdout, '7\n');
    assert.equal((await run(node.manager, s.id, ['test', '-e', '/var/cache/forkd-debs'])).exitCode, 1, 'the .debs are gone');
    await assert.rejects(node.service.buildTemplate({ name: 'nope', aptPackages: ['no-such-package-forkd'] }, () => {}), { code: 'FAILED_PRECONDITION' });
  });

  test('ready: the template is taken once the start command serves, not when its CPU first goes quiet', async () => {
    // Idle for 2 s, then serving: CPU settles long before the port opens.
    const start = 'sleep 2 && exec python3 -m http.server 9000 --bind 127.0.0.1 --directory /etc';
    const status = async (template: string) => {
      const s = await node.manager.create({ template });
      return (await run(node.manager, s.id, ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', 'http://127.0.0.1:9000/hostname'])).stdout;
    };
    assert.equal((await node.service.buildTemplate({ name: 'slow-ready', start, ready: 'curl -sf -o /dev/null http://127.0.0.1:9000/hostname' }, () => {})).warm, true);
    assert.equal(await status('slow-ready'), '200', 'listening from the first instant');
    // Without it, the template is taken while the start command still sleeps.
    assert.equal((await node.service.buildTemplate({ name: 'slow-bare', start }, () => {})).warm, true);
    assert.equal(await status('slow-bare'), '000');
  });
});
