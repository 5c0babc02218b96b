import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api } from '../testing/http-client.js';
import { stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { startCodeInterpreterDaemon } from '../testing/code-interpreter-daemon.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runSdkChild, type SdkChildTarget } from '../testing/sdk-child.js';

/*
 * The code interpreter template (`forkd template build code-interpreter
 * --recipe code-interpreter`, built once here: the slow part) driven by E2B's
 * @e2b/code-interpreter SDK, unchanged, in a child process that reaches
 * `49999-{id}.{domain}` over HTTPS as against E2B's cloud (testing/sdk-child.ts);
 * then forkd's snapshot, rewind and fork keep the kernel's variables.
 */

describe('code interpreter: @e2b/code-interpreter against the code-interpreter template', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let target: SdkChildTarget;
  let sandboxId = '';
  const sdk = (...args: string[]) => runSdkChild(target, 'code-interpreter-main.js', args);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-ci-'));
    cfg = testConfig(dir);
    const c = await startCodeInterpreterDaemon(dir, cfg.env, 'ci.forkd.test');
    daemon = c.daemon;
    target = c.target;
    assert.equal(c.template.warm, true, 'the kernel is running in the template');
    assert.match(c.buildLog, /apt: \d+ packages fetched by the host/);
    console.log(`# code-interpreter template build: ${(c.buildMs / 1000).toFixed(0)} s, ${/apt: (\d+) packages/.exec(c.buildLog)?.[1]} packages`);
  });

  after(async () => {
    if (sandboxId) await sdk('kill', sandboxId).catch(() => {});
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test("Sandbox.create() (E2B's code-interpreter-v1) and runCode: output, results, charts, tables, errors, contexts", async () => {
    const out = await sdk('create');
    sandboxId = out.sandboxId as string;
    assert.equal(out.jupyterUrl, `https://49999-${sandboxId}.${target.domain}`);
    assert.deepEqual(out.printed, { stdout: ['hello from the kernel\n'], stderr: ['to stderr\n'], logs: { stdout: ['hello from the kernel\n'], stderr: ['to stderr\n'] } });
    assert.equal(out.expression, '2');
    const plot = out.plot as { formats: string[][]; pngHead: string | null; pngBytes: number; error?: string };
    assert.equal(plot.pngHead, '89504e470d0a1a0a', `a PNG from plt.show(): ${JSON.stringify(plot)}`);
    assert.ok(plot.pngBytes > 5000, `a real chart: ${plot.pngBytes} bytes`);
    const table = out.table as { text: string; html: string | null };
    assert.match(table.text, /city\s+temp\n0\s+Oslo\s+4\n1\s+Lima\s+19/);
    assert.match(table.html ?? '', /<table[^>]*class="dataframe"[\s\S]*<td>Oslo<\/td>/);
    const error = out.error as { name: string; value: string; traceback: string };
    assert.equal(error.name, 'ValueError');
    assert.equal(error.value, 'bad value');
    // IPython's, ANSI colours and all, as E2B's server sends it.
    assert.match(error.traceback.replace(/\x1b\[[0-9;]*m/g, ''), /----> 2\s+raise ValueError\("bad value"\)[\s\S]*ValueError: bad value$/);
    const ctx = out.context as { created: { id: string; language: string; cwd: string }; cwd: string; own: unknown; isolated: string | null; listed: boolean };
    assert.equal(ctx.created.cwd, '/tmp');
    assert.equal(ctx.created.language, 'python');
    assert.equal(ctx.cwd, '/tmp');
    assert.equal(ctx.own, null);
    assert.equal(ctx.isolated, 'NameError', "a context's variables are its own");
    assert.ok(ctx.listed);
    assert.equal(out.restarted, 'NameError', 'a restarted context starts afresh');
    assert.equal(out.removed, true);
    assert.deepEqual(out.envs, { during: 'for this run', after: 'unset' }, "runCode's envs are for that run only");
    assert.deepEqual(out.child, ['from a child\n', 'after it\n'], "a subprocess's output (fd 1) comes before what the cell printed after it");
    assert.equal(out.died, 'DeadKernelError', 'a kernel that exits ends its cell with an error');
    assert.equal(out.afterDeath, '2', 'and the context has a new kernel');
    const timedOut = out.timedOut as { stuck: string; next: string | null; ms: number };
    assert.equal(timedOut.stuck, 'TimeoutError');
    assert.equal(timedOut.next, '2', 'the loop was interrupted when its client went: the context serves again');
    assert.ok(timedOut.ms < 10_000, `freed within seconds: ${timedOut.ms} ms`);
    assert.ok(typeof out.rttMs === 'number');
  });

  test("the kernel's state survives snapshot, rewind and fork", async () => {
    assert.ok(sandboxId, 'the first test made the sandbox');
    // forkd's own API, with a key of the sandbox's tenant (E2B's key is one).
    const tenant = { url: daemon!.url, apiKey: target.key };
    const snap = await api(tenant, 'POST', `/v1/sandboxes/${sandboxId}/snapshots`, {});
    assert.equal(snap.status, 201, snap.text);
    assert.equal((await sdk('run', sandboxId, 'secret = "after"; secret')).text, 'after');
    const rewound = await api(tenant, 'POST', `/v1/sandboxes/${sandboxId}/rewind`, { snapshot: snap.json.id });
    assert.equal(rewound.status, 200, rewound.text);
    assert.equal((await sdk('run', sandboxId, 'secret')).text, 'before', 'the variable as it was at the snapshot');
    const forked = await api(tenant, 'POST', `/v1/sandboxes/${sandboxId}/fork`, { count: 1 });
    assert.equal(forked.status, 201, forked.text);
    const fork = forked.json.sandboxes[0].id as string;
    try {
      assert.equal((await sdk('run', fork, 'secret')).text, 'before', 'the fork has the kernel with its variables');
      assert.equal((await sdk('run', fork, 'secret = "fork"; secret')).text, 'fork');
      assert.equal((await sdk('run', sandboxId, 'secret')).text, 'before', 'the parent is untouched by its fork');
    } finally {
      await sdk('kill', fork).catch(() => {});
    }
  });
});
