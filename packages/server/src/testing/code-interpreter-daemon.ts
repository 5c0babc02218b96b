import { randomInt } from 'node:crypto';
import type { TemplateInfo } from '@forkd/protocol';
import { runCli, stopDaemonProcess, type DaemonProcess } from './daemon-process.js';
import { startE2bDaemon } from './e2b-daemon.js';
import { waitFor } from './helpers.js';
import type { SdkChildTarget } from './sdk-child.js';
import { issueTestCertificate, makeTestCa } from './tls-test-ca.js';

export interface CodeInterpreterDaemon {
  daemon: DaemonProcess;
  /** For runSdkChild: E2B's SDK reaching this daemon by `{port}-{id}.{domain}` over HTTPS. */
  target: SdkChildTarget;
  template: TemplateInfo;
  /** The build's progress (stderr of `forkd template build`). */
  buildLog: string;
  buildMs: number;
}

/**
 * A real `forkd serve` with E2B's API and HTTPS sandbox hosts (a wildcard
 * certificate of a CA made in `dir`, on a loopback address of its own), and
 * the code interpreter template built by `forkd template build
 * code-interpreter --recipe code-interpreter` with the admin key: the
 * e2e test's and the benchmark's. Stop it with stopDaemonProcess.
 */
export async function startCodeInterpreterDaemon(dir: string, env: NodeJS.ProcessEnv, domain: string): Promise<CodeInterpreterDaemon> {
  const address = `127.${randomInt(2, 250)}.${randomInt(2, 250)}.${randomInt(2, 250)}`;
  const ca = await makeTestCa(dir);
  const cert = await issueTestCertificate(ca, dir, 'wildcard', [`*.${domain}`]);
  const e = await startE2bDaemon({ ...env, FORKD_HOST: address, FORKD_PROXY_DOMAIN: domain, FORKD_PROXY_TLS_CERT_FILE: cert.certFile, FORKD_PROXY_TLS_KEY_FILE: cert.keyFile, FORKD_PROXY_HTTPS_PORT: '443' });
  const d = e.daemon;
  const t0 = performance.now();
  let built;
  try {
    await waitFor(() => /"msg":"sandbox hosts serving"/.test(d.log()), 10_000, 'the sandbox hosts listener');
    built = await runCli(d.url, { ...env, FORKD_API_KEY: d.apiKey }, ['template', 'build', 'code-interpreter', '--recipe', 'code-interpreter', '--json']);
    if (built.code !== 0) throw new Error(`the code interpreter's build failed (${built.code}):\n${built.stderr.slice(-4000)}`);
  } catch (err) {
    await stopDaemonProcess(d);
    throw err;
  }
  const buildMs = performance.now() - t0;
  return { daemon: d, target: { domain, address, caFile: ca.certFile, key: e.key, log: () => d.log() }, template: JSON.parse(built.stdout) as TemplateInfo, buildLog: built.stderr, buildMs };
}
