import { randomPort, startDaemonProcess, type DaemonProcess } from './daemon-process.js';

export interface E2bDaemon {
  daemon: DaemonProcess;
  /** What E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY are set to for the SDK. */
  apiUrl: string;
  envdUrl: string;
  key: string;
}

/**
 * A real `forkd serve` with its E2B API and envd gateway on free ports, and
 * an e2b-format key of `tenant` (E2B's SDK tests, the benchmark's E2B rows,
 * scripts/e2b-sdk-suite.mjs).
 */
export async function startE2bDaemon(env: NodeJS.ProcessEnv, tenant = 'e2b-test', timeoutMs = 60_000): Promise<E2bDaemon> {
  const apiPort = randomPort();
  let envdPort = randomPort();
  while (envdPort === apiPort) envdPort = randomPort();
  const daemon = await startDaemonProcess({ ...env, FORKD_E2B_API_PORT: String(apiPort), FORKD_E2B_ENVD_PORT: String(envdPort) });
  for (const until = Date.now() + timeoutMs; !/e2b envd serving/.test(daemon.log()); ) {
    if (Date.now() > until) throw new Error(`daemon never logged that envd serves:\n${daemon.log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const r = await fetch(`${daemon.url}/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${daemon.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ format: 'e2b', tenant }) });
  if (r.status !== 201) throw new Error(`no e2b key (HTTP ${r.status}): ${await r.text()}`);
  const { key } = (await r.json()) as { key: string };
  // On the daemon's own address (FORKD_HOST), 127.0.0.1 unless the test chose another.
  const host = new URL(daemon.url).hostname;
  return { daemon, apiUrl: `http://${host}:${apiPort}`, envdUrl: `http://${host}:${envdPort}`, key };
}
