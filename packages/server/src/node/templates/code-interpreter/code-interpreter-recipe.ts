import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { BuildTemplateRequest } from '@forkd/protocol';
import { REPO_ROOT } from '../../../shared/config.js';

/** What E2B's code interpreter SDK creates by default (`Sandbox.defaultTemplate`); forkd's E2B API answers it with CODE_INTERPRETER_TEMPLATE. */
export const E2B_CODE_INTERPRETER_TEMPLATE = 'code-interpreter-v1';
export const CODE_INTERPRETER_TEMPLATE = 'code-interpreter';

/** Debian 12's: IPython 8.5 (the kernel, kernel.py); matplotlib's inline backend for PNG charts, pandas for tables. */
export const CODE_INTERPRETER_PACKAGES = ['python3-ipython', 'python3-matplotlib-inline', 'python3-matplotlib', 'python3-pandas'] as const;

/** The server's and the kernel's sources, in the checkout (tsc copies no .py into dist). */
export const CODE_INTERPRETER_SOURCES = ['server.py', 'kernel.py'].map((f) => join(REPO_ROOT, 'packages/server/src/node/templates/code-interpreter', f));
const INSTALL_DIR = '/opt/forkd-code-interpreter';

/**
 * The code interpreter template (`forkd template build code-interpreter
 * --recipe code-interpreter`, admin keys: it installs Debian packages):
 * base with IPython, kernel.py and server.py as the warm start command, so
 * sandboxes start with the default kernel running and its imports loaded.
 */
export async function codeInterpreterRequest(name: string = CODE_INTERPRETER_TEMPLATE): Promise<BuildTemplateRequest> {
  // Base64: the sources pass through bash untouched, whatever they contain.
  const install = await Promise.all(CODE_INTERPRETER_SOURCES.map(async (f) => `echo ${(await readFile(f)).toString('base64')} | base64 -d > ${INSTALL_DIR}/${basename(f)}`));
  return {
    name,
    from: 'base',
    // For every tenant, as E2B's code-interpreter-v1 is.
    shared: true,
    aptPackages: [...CODE_INTERPRETER_PACKAGES],
    setup: [`mkdir -p ${INSTALL_DIR} && ${install.join(' && ')}`],
    start: `cd /home/user && exec python3 ${INSTALL_DIR}/server.py`,
    // It listens once its default kernel is up with its imports loaded.
    ready: 'curl -sf -o /dev/null http://127.0.0.1:49999/health',
  };
}
