import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestNode, debianLayer, run, writeTestImage, type TestNode } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, type BenchRow } from './row-line.js';

const file = (data: string) => ({ sha: createHash('sha256').update(data).digest('hex'), b64: Buffer.from(data).toString('base64') });

/**
 * Dockerfile builds (issue 26) FROM template:base with ENV, WORKDIR, COPY,
 * RUN and CMD: a rebuild with nothing changed (every step from the step
 * cache, the template left as it is), and one with only the last RUN
 * changed (one build sandbox, then the warm start command).
 */
export async function dockerfileRows(quick: boolean): Promise<BenchRow[]> {
  // The default warm pool (FORKD_WARM_POOL=2): a built template gets a member of its own.
  const node = await createTestNode({ warmPool: 2 });
  const rows = liveRows();
  try {
    const app = file('print("hello")\n');
    const context = { entries: [{ type: 'file' as const, path: 'app.py', mode: 0o644, sha256: app.sha }], blobs: { [app.sha]: app.b64 } };
    const dockerfile = (last: string) => `FROM template:base\nENV APP=/srv/app\nWORKDIR $APP\nCOPY app.py .\nRUN python3 -c 'print(1)' > one.txt\n${last}\nCMD ["sleep", "100000"]\n`;
    const build = async (last: string) => {
      const t0 = performance.now();
      await node.service.buildTemplate({ name: 'bench-df', dockerfile: dockerfile(last), context }, () => {});
      return performance.now() - t0;
    };
    await build('RUN echo 0 > last.txt');
    const same: number[] = [];
    for (let i = 0; i < (quick ? 3 : 20); i++) same.push(await build('RUN echo 0 > last.txt'));
    rows.push({ name: 'template build from a cached Dockerfile (no change)', unit: 'ms', target: '≤ 1000', summary: summarize(same) });
    const changed: number[] = [];
    for (let i = 1; i <= (quick ? 1 : 5); i++) changed.push(await build(`RUN echo ${i} > last.txt`));
    rows.push({ name: 'template build from a Dockerfile, last RUN changed (warm CMD)', unit: 'ms', summary: summarize(changed) });
    const s = await node.manager.create({ template: 'bench-df' });
    if ((await run(node.manager, s.id, ['cat', '/srv/app/last.txt'])).stdout.trim() !== String(quick ? 1 : 5)) throw new Error('the Dockerfile bench built something else');
    await node.manager.delete(s.id);
    rows.push({ name: 'first sandbox from a newly built image template (warm start command): create → first exec completed', unit: 'ms', target: '≤ 50', summary: summarize(await imageTemplateFirsts(node, quick ? 5 : 20)) });
  } finally {
    await node.dispose();
  }
  return [...rows];
}

/**
 * An OCI image made here (a Debian-like root of the host's own binaries,
 * its Cmd a long sleep: a warm template), built as a template, then `n`
 * sandboxes made from it one at a time, each timed from create to its
 * first exec completed, and deleted. A built template gets a warm pool
 * member (FORKD_WARM_POOL_TEMPLATES), which the creates adopt.
 */
async function imageTemplateFirsts(node: TestNode, n: number): Promise<number[]> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-img-'));
  try {
    await writeTestImage(join(dir, 'oci'), 'warm', [await debianLayer()], { Env: ['PATH=/usr/bin:/bin'], Cmd: ['/usr/bin/sleep', '100000'] });
    await node.service.buildTemplate({ name: 'bench-img', fromImage: `oci:${join(dir, 'oci')}:warm` }, () => {});
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      // As the base create rows: the pool refilled between creates (the first is the build's own).
      await node.manager.warmPool.settled();
      const t0 = performance.now();
      const s = await node.manager.create({ template: 'bench-img' });
      if ((await run(node.manager, s.id, ['cat', '/etc/debian_version'])).stdout.trim() !== '12.0') throw new Error('the image template is not the image');
      out.push(performance.now() - t0);
      await node.manager.delete(s.id);
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
