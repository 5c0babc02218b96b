/**
 * Run by e2e/code-interpreter.int.test.ts through testing/sdk-child.ts: E2B's
 * @e2b/code-interpreter SDK, unchanged, against forkd's HTTPS sandbox hosts.
 * `create`: a sandbox from the SDK's default template, every kind of output,
 * then `secret = 'before'` (the sandbox is left running); `run ID CODE`: the
 * code in sandbox ID's default context; `kill ID`; `bench N` (the benchmark's). Prints one JSON report.
 */
import { Sandbox } from '@e2b/code-interpreter';

const [cmd, id, code] = process.argv.slice(2);
const report: Record<string, unknown> = {};

async function create(): Promise<void> {
  const sbx = await Sandbox.create({ timeoutMs: 600_000 });
  report.sandboxId = sbx.sandboxId;
  report.jupyterUrl = (sbx as unknown as { jupyterUrl: string }).jupyterUrl;
  const stdout: string[] = [];
  const stderr: string[] = [];
  const printed = await sbx.runCode('import sys\nprint("hello from the kernel")\nprint("to stderr", file=sys.stderr)', { onStdout: (m) => void stdout.push(m.line), onStderr: (m) => void stderr.push(m.line) });
  report.printed = { stdout, stderr, logs: printed.logs };
  report.expression = (await sbx.runCode('1 + 1')).text;
  const plot = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.title("forkd")\nplt.show()');
  const png = plot.results.find((r) => r.png)?.png;
  report.plot = { formats: plot.results.map((r) => r.formats()), pngHead: png ? Buffer.from(png, 'base64').subarray(0, 8).toString('hex') : null, pngBytes: png ? Buffer.from(png, 'base64').length : 0, error: plot.error?.value };
  const table = await sbx.runCode('import pandas as pd\npd.DataFrame({"city": ["Oslo", "Lima"], "temp": [4, 19]})');
  report.table = { text: table.text, html: table.results[0]?.html ?? null };
  const failed = await sbx.runCode('def f():\n    raise ValueError("bad value")\nf()');
  report.error = failed.error ? { name: failed.error.name, value: failed.error.value, traceback: failed.error.traceback } : null;
  const ctx = await sbx.createCodeContext({ cwd: '/tmp' });
  report.context = {
    created: ctx,
    cwd: (await sbx.runCode('import os\nos.getcwd()', { context: ctx })).text,
    own: (await sbx.runCode('only_here = 7', { context: ctx })).error ?? null,
    isolated: (await sbx.runCode('only_here')).error?.name ?? null,
    listed: (await sbx.listCodeContexts()).map((c) => c.id).includes(ctx.id),
  };
  await sbx.restartCodeContext(ctx);
  report.restarted = (await sbx.runCode('only_here', { context: ctx })).error?.name ?? null;
  await sbx.removeCodeContext(ctx);
  report.removed = !(await sbx.listCodeContexts()).some((c) => c.id === ctx.id);
  report.envs = {
    during: (await sbx.runCode('import os\nos.environ["CI_VAR"]', { envs: { CI_VAR: 'for this run' } })).text ?? null,
    after: (await sbx.runCode('import os\nos.environ.get("CI_VAR", "unset")')).text ?? null,
  };
  const child = await sbx.runCode('import subprocess\nsubprocess.run(["echo", "from a child"])\nprint("after it")');
  report.child = child.logs.stdout;
  report.died = (await sbx.runCode('import os\nos._exit(3)')).error?.name ?? null;
  report.afterDeath = (await sbx.runCode('1+1')).text ?? null;
  const t0 = performance.now();
  const stuck = await sbx.runCode('while True: pass', { timeoutMs: 1500 }).then(
    () => 'finished',
    (e: unknown) => (e as Error).name,
  );
  report.timedOut = { stuck, next: (await sbx.runCode('1+1')).text ?? null, ms: performance.now() - t0 };
  const rtt: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await sbx.runCode('1+1');
    rtt.push(performance.now() - t0);
  }
  report.rttMs = rtt.sort((a, b) => a - b)[10];
  await sbx.runCode('secret = "before"');
}

/** The benchmark's: N round trips of runCode('1+1') in a fresh sandbox, after a warm-up (connections, TLS sessions). */
async function bench(n: number): Promise<void> {
  const t0 = performance.now();
  const sbx = await Sandbox.create({ timeoutMs: 600_000 });
  try {
    await sbx.runCode('1+1');
    report.firstRunMs = performance.now() - t0;
    const rtt: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const e = await sbx.runCode('1+1');
      rtt.push(performance.now() - t);
      if (e.text !== '2') throw new Error(`runCode('1+1') gave ${JSON.stringify(e.toJSON())}`);
    }
    report.rttMs = rtt;
    // The same path with (almost) no kernel work: what the port proxy and TLS cost.
    const url = `${(sbx as unknown as { jupyterUrl: string }).jupyterUrl}/health`;
    const headers = { 'e2b-traffic-access-token': sbx.trafficAccessToken ?? '', 'x-access-token': (sbx as unknown as { envdAccessToken?: string }).envdAccessToken ?? '' };
    const health: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const r = await fetch(url, { headers });
      await r.text();
      if (r.status !== 200) throw new Error(`GET /health: HTTP ${r.status}`);
      health.push(performance.now() - t);
    }
    report.healthMs = health;
  } finally {
    await sbx.kill();
  }
}

async function run(): Promise<void> {
  const sbx = await Sandbox.connect(id!);
  const e = await sbx.runCode(code!);
  report.text = e.text ?? null;
  report.error = e.error?.name ?? null;
}

if (cmd === 'create') await create();
else if (cmd === 'run') await run();
else if (cmd === 'bench') await bench(Number(id ?? 30));
else if (cmd === 'kill') report.killed = await Sandbox.kill(id!);
else throw new Error(`unknown command ${cmd}`);
process.stdout.write(`${JSON.stringify(report)}\n`);
