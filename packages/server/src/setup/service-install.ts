import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../shared/exec.js';
import { environmentFile, INSTALL_MARKER, SERVICE_NAME, SERVICE_PATHS, serviceUnit, wrapperScript, type ServiceUnitOptions } from './service-unit.js';

export interface ServiceInstallOptions extends ServiceUnitOptions {
  /** Where the installed system's / is ('/' for this host; a directory for a staged or test install: systemctl is never run there). */
  root: string;
  /** Write the files but do not enable or start the unit. */
  noStart: boolean;
  /** The FORKD_* settings the environment file is made from (when there is none yet). */
  env: NodeJS.ProcessEnv;
}

export interface ServiceReport {
  /** What was done, one line each, paths as the installed system sees them. */
  done: string[];
  /** Why the unit was not started (or stopped), when it was not. */
  notRunning?: string;
}

/** sd_booted(3): systemd is the init system (it made /run/systemd/system), so systemctl can act. */
export function systemdRunning(): boolean {
  return existsSync('/run/systemd/system');
}

/** Why systemctl must not be run for this install, if it must not. */
function whyNotSystemctl(opts: { root: string; noStart: boolean }): string | undefined {
  if (opts.root !== '/') return `installed under ${opts.root}, not this host's root`;
  if (opts.noStart) return '--no-start';
  if (!systemdRunning()) return 'systemd is not the init system here (PID 1 is not systemd)';
  return undefined;
}

async function systemctl(args: string[], allowFailure = false): Promise<void> {
  await exec('systemctl', args, { allowFailure, timeoutMs: 120_000 });
}

/** Refuses before anything is written when a file install would replace is someone else's (no install marker). */
async function assertOwned(path: string, shown: string): Promise<void> {
  const old = await readFile(path, 'utf8').catch(() => undefined);
  if (old !== undefined && !old.includes(INSTALL_MARKER)) throw new ForkdError('ALREADY_EXISTS', `${shown} exists and was not written by forkd install: move it away first`);
}

async function writeOwned(path: string, text: string, mode: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  await writeFile(path, text, { mode });
  await chmod(path, mode);
}

/** `forkd install`: the unit, the environment file (kept if there), the CLI on PATH; then enabled and started where systemd runs. */
export async function installService(opts: ServiceInstallOptions): Promise<ServiceReport> {
  const at = (p: string) => join(opts.root, p);
  const unit = serviceUnit(opts);
  const wrapper = wrapperScript(opts);
  const done: string[] = [];
  await assertOwned(at(SERVICE_PATHS.unit), SERVICE_PATHS.unit);
  await assertOwned(at(SERVICE_PATHS.wrapper), SERVICE_PATHS.wrapper);
  await writeOwned(at(SERVICE_PATHS.unit), unit, 0o644);
  done.push(`wrote ${SERVICE_PATHS.unit}`);
  if (existsSync(at(SERVICE_PATHS.envFile))) done.push(`kept ${SERVICE_PATHS.envFile}`);
  else {
    // Private: it may hold a database URL or a registry password.
    await mkdir(dirname(at(SERVICE_PATHS.envFile)), { recursive: true, mode: 0o755 });
    await writeFile(at(SERVICE_PATHS.envFile), environmentFile(opts.env), { mode: 0o600, flag: 'wx' });
    done.push(`wrote ${SERVICE_PATHS.envFile} (FORKD_* settings of this shell)`);
  }
  await writeOwned(at(SERVICE_PATHS.wrapper), wrapper, 0o755);
  done.push(`wrote ${SERVICE_PATHS.wrapper} (runs ${opts.checkout})`);
  const notRunning = whyNotSystemctl(opts);
  if (notRunning) return { done, notRunning };
  await systemctl(['daemon-reload']);
  await systemctl(['enable', SERVICE_NAME]);
  // restart, not start: a reinstall over a running service takes the new unit (sandboxes stay, KillMode=process).
  await systemctl(['restart', SERVICE_NAME]);
  done.push(`enabled and started ${SERVICE_NAME}`);
  return { done };
}

/** Removes `path` if install wrote it; says what it did. */
async function removeOwned(path: string, shown: string, done: string[]): Promise<void> {
  const old = await readFile(path, 'utf8').catch(() => undefined);
  if (old === undefined) return;
  if (!old.includes(INSTALL_MARKER)) {
    done.push(`left ${shown}: not written by forkd install`);
    return;
  }
  await rm(path, { force: true });
  done.push(`removed ${shown}`);
}

/** `forkd uninstall`: stop and disable the unit, remove it and the CLI wrapper. The environment file and all state stay. */
export async function uninstallService(opts: { root: string }): Promise<ServiceReport> {
  const at = (p: string) => join(opts.root, p);
  const done: string[] = [];
  const notRunning = whyNotSystemctl({ root: opts.root, noStart: false });
  if (!notRunning && existsSync(at(SERVICE_PATHS.unit))) {
    await systemctl(['disable', '--now', SERVICE_NAME], true);
    done.push(`stopped and disabled ${SERVICE_NAME}`);
  }
  await removeOwned(at(SERVICE_PATHS.unit), SERVICE_PATHS.unit, done);
  await removeOwned(at(SERVICE_PATHS.wrapper), SERVICE_PATHS.wrapper, done);
  if (!notRunning) await systemctl(['daemon-reload'], true);
  return notRunning ? { done, notRunning } : { done };
}
