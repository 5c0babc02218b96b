import { createHash } from 'node:crypto';
import { createTestNode, run } from '@forkd/server/testing';
import { summarize, type Summary } from './stats.js';
import { LiveRows } from './live-rows.js';
import { rowLine } from './row-line.js';

export interface DockerfileRow {
  name: string;
  unit: string;
  target?: string;
  summary: Summary;
}

const file = (data: string) => ({ sha: createHash('sha256').update(data).digest('hex'), b64: Buffer.from(data).toString('base64') });

/**
 * Dockerfile builds (issue 26) FROM template:base with ENV, WORKDIR, COPY,
 * RUN and CMD: a rebuild with nothing changed (every step from the step
 * cache, the template left as it is), and one with only the last RUN
 * changed (one build sandbox, then the warm start command).
 */
export async function dockerfileRows(quick: boolean): Promise<DockerfileRow[]> {
  const node = await createTestNode({});
  const rows = new LiveRows<DockerfileRow>(rowLine);
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
  } finally {
    await node.dispose();
  }
  return [...rows];
}
