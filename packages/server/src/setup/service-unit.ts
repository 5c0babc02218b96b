import { ForkdError } from '@forkd/protocol';

export const SERVICE_NAME = 'forkd.service';
/** Where the installed files live, as the installed system sees them (`forkd install --root` puts them under a prefix). */
export const SERVICE_PATHS = {
  unit: '/etc/systemd/system/forkd.service',
  envFile: '/etc/forkd/forkd.env',
  wrapper: '/usr/local/bin/forkd',
} as const;
/** The flags `./forkd` runs the CLI's bundle with: no --enable-source-maps, the bundle's bin turns maps on where a stack is read (scripts/bundle-cli.mjs). */
export const CLI_NODE_FLAGS = ['--experimental-websocket', '--no-warnings=ExperimentalWarning'] as const;
/** The daemon's (the unit's ExecStart): its log's stacks name .ts lines. */
export const NODE_FLAGS = [...CLI_NODE_FLAGS, '--enable-source-maps'] as const;
/** The first line of every file install writes: uninstall removes only files that carry it. */
export const INSTALL_MARKER = 'Written by `forkd install`';

export interface ServiceUnitOptions {
  /** Absolute path of the node binary. */
  node: string;
  /** Absolute path of the checkout (or package) whose packages/cli/dist/main.js runs. */
  checkout: string;
  envFile?: string;
}

/**
 * Paths go into a unit and a shell script unquoted: anything systemd or sh
 * would read as more than a path (whitespace, quotes, `%` specifiers, `$`)
 * is refused rather than escaped twice over.
 */
const PLAIN_PATH = /^\/[A-Za-z0-9._+@,:=/-]*$/;

export function assertPlainPath(what: string, path: string): void {
  if (!PLAIN_PATH.test(path)) throw new ForkdError('INVALID_ARGUMENT', `${what} ${JSON.stringify(path)}: forkd install needs an absolute path of letters, digits and ._+@,:=/- only`);
}

/** The CLI's entry point in a checkout. */
export function cliEntry(checkout: string): string {
  return `${checkout.replace(/\/+$/, '')}/packages/cli/dist/main.js`;
}

/** The CLI as `./forkd` runs it (scripts/bundle-cli.mjs): what the wrapper on PATH runs. */
export function cliBundle(checkout: string): string {
  return `${checkout.replace(/\/+$/, '')}/packages/cli/dist/bundle/forkd.js`;
}

/** `forkd serve` as the unit's ExecStart runs it (argv). */
export function serveArgv(opts: ServiceUnitOptions): string[] {
  assertPlainPath('node', opts.node);
  assertPlainPath('checkout', opts.checkout);
  return [opts.node, ...NODE_FLAGS, cliEntry(opts.checkout), 'serve'];
}

/**
 * forkd.service. KillMode=process: a stop or restart signals the daemon
 * only. Sandboxes run in their own cgroups (FORKD_CGROUP_PARENT, outside
 * the unit's), but the network namespaces' holder, egress relays and the
 * like are the daemon's children in its cgroup; systemd's default
 * (control-group) would kill them and every sandbox's network with them.
 * The next start adopts what is still running. No systemd sandboxing
 * directives: the daemon mounts, loops devices, runs runc and CRIU on the
 * whole host, and confines each sandbox itself.
 */
export function serviceUnit(opts: ServiceUnitOptions): string {
  const argv = serveArgv(opts);
  const envFile = opts.envFile ?? SERVICE_PATHS.envFile;
  assertPlainPath('environment file', envFile);
  return `# ${INSTALL_MARKER} from ${opts.checkout}; \`forkd uninstall\` removes it.
[Unit]
Description=forkd: stateful sandboxes for AI agents
After=network-online.target local-fs.target
Wants=network-online.target

[Service]
Type=exec
# FORKD_* settings (port, host, state dir, pool...), one NAME=VALUE a line.
EnvironmentFile=-${envFile}
ExecStart=${argv.join(' ')}
# Only the daemon gets SIGTERM: sandboxes and the helpers they need outlive a stop or restart.
KillMode=process
KillSignal=SIGTERM
TimeoutStopSec=60
Restart=on-failure
RestartSec=2
LimitNOFILE=1048576
LimitNPROC=infinity
TasksMax=infinity
StandardOutput=journal
StandardError=journal
SyslogIdentifier=forkd

[Install]
WantedBy=multi-user.target
`;
}

/** /usr/local/bin/forkd: the checkout's CLI bundle with the flags `./forkd` gives it (no build step: install runs from a built checkout). */
export function wrapperScript(opts: ServiceUnitOptions): string {
  serveArgv(opts); // the same paths, checked the same way
  const argv = [opts.node, ...CLI_NODE_FLAGS, cliBundle(opts.checkout), '"$@"'];
  return `#!/bin/sh
# ${INSTALL_MARKER} from ${opts.checkout}; \`forkd uninstall\` removes it.
exec ${argv.join(' ')}
`;
}

/** What the CLI reads as client settings: not the daemon's, never written to its environment file. */
const CLIENT_ONLY = new Set(['FORKD_URL', 'FORKD_API_KEY', 'FORKD_TENANT', 'FORKD_DEBUG']);
const ENV_NAME = /^FORKD_[A-Z0-9_]+$/;
const BARE_VALUE = /^[A-Za-z0-9._+@,:=/%-]*$/;

/**
 * The environment file install writes when there is none: the FORKD_*
 * daemon settings of the installing shell (so `FORKD_POOL=… forkd install`
 * serves what `FORKD_POOL=… forkd serve` would), values double-quoted when
 * they are not plain. A value with a newline cannot be written: refused.
 */
export function environmentFile(env: NodeJS.ProcessEnv): string {
  const lines = [`# ${INSTALL_MARKER}; FORKD_* settings of forkd.service, one NAME=VALUE a line (see README).`];
  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    if (value === undefined || !ENV_NAME.test(name) || CLIENT_ONLY.has(name)) continue;
    if (/[\n\r\0]/.test(value)) throw new ForkdError('INVALID_ARGUMENT', `${name}: a value with a line break cannot go in ${SERVICE_PATHS.envFile}`);
    lines.push(`${name}=${BARE_VALUE.test(value) ? value : `"${value.replace(/[\\"`$]/g, (c) => `\\${c}`)}"`}`);
  }
  return lines.join('\n') + '\n';
}

/**
 * Reads an environment file as systemd does for what `environmentFile`
 * writes and what people write by hand: NAME=VALUE lines, comments, values
 * bare, single- or double-quoted (backslash escapes in double quotes).
 * Lines it cannot read are skipped, as systemd skips them.
 */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(line);
    if (!m || line.startsWith('#')) continue;
    const value = unquote(m[2]!);
    if (value !== undefined) out[m[1]!] = value;
  }
  return out;
}

function unquote(v: string): string | undefined {
  if (v.startsWith("'")) return v.length > 1 && v.endsWith("'") ? v.slice(1, -1) : undefined;
  if (!v.startsWith('"')) return v.trimEnd();
  if (v.length < 2 || !v.endsWith('"')) return undefined;
  let out = '';
  const body = v.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '\\' && i + 1 < body.length) out += body[++i]!;
    else if (c === '"') return undefined;
    else out += c;
  }
  return out;
}
