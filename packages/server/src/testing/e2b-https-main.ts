/**
 * Run by e2e/sandbox-hosts.int.test.ts in a child process that trusts the
 * test's CA (NODE_EXTRA_CA_CERTS) and resolves the test's domain to the
 * daemon (testing/loopback-resolver.ts): E2B's SDK, unchanged, configured
 * only by E2B_DOMAIN and E2B_API_KEY, as against E2B's own cloud. Prints one
 * JSON report on stdout; the test asserts on it.
 */
type SandboxClass = typeof import('e2b').Sandbox;

const which = process.argv[2] ?? 'e2b';
const { Sandbox } = (await import(which)) as { Sandbox: SandboxClass };
const report: Record<string, unknown> = { sdk: which };

async function untilServed(url: string, headers: Record<string, string>): Promise<Response> {
  for (const until = Date.now() + 15_000; ; ) {
    const r = await fetch(url, { headers }).catch((err: unknown) => err as Error);
    if (r instanceof Response && r.status === 200) return r;
    if (Date.now() > until) throw new Error(`${url}: ${r instanceof Response ? `HTTP ${r.status} ${await r.text()}` : r.message}`);
    await new Promise((res) => setTimeout(res, 200));
  }
}

const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
try {
  report.sandboxId = sbx.sandboxId;
  report.sandboxDomain = sbx.sandboxDomain;
  report.envdUrl = (sbx as unknown as { envdApiUrl: string }).envdApiUrl;
  const r = await sbx.commands.run('echo over-https; whoami');
  report.run = { stdout: r.stdout, exitCode: r.exitCode };
  const streamed: string[] = [];
  await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.2; done', { onStdout: (d) => void streamed.push(d) });
  report.streamed = streamed;
  await sbx.files.write('/tmp/site/hello.txt', 'written through 49983');
  report.read = await sbx.files.read('/tmp/site/hello.txt');
  report.downloaded = await (await fetch(await sbx.downloadUrl('/tmp/site/hello.txt'))).text();
  await sbx.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/site', { background: true });
  report.host = sbx.getHost(8000);
  const traffic = { 'e2b-traffic-access-token': sbx.trafficAccessToken ?? '' };
  report.served = await (await untilServed(`https://${sbx.getHost(8000)}/hello.txt`, traffic)).text();
  report.anonymousStatus = (await fetch(`https://${sbx.getHost(8000)}/hello.txt`)).status;
  report.isRunning = await sbx.isRunning();
} finally {
  report.killed = await sbx.kill();
}
process.stdout.write(`${JSON.stringify(report)}\n`);
