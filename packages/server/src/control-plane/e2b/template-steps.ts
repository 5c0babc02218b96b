import { posix } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { BASH_OR_SH } from '../../shared/dockerfile/bash-or-sh.js';
import type { E2bTemplateBody } from './template-build-schemas.js';

/**
 * E2B's template program (fromImage/fromTemplate, steps, start and ready
 * commands, as the SDK's `Template.build` sends it) as a Dockerfile that
 * forkd's own Dockerfile builder runs: so the same step cache serves both,
 * and each E2B step's failure is known by the Dockerfile instruction it
 * became (`stepOf`). Every value is quoted for Dockerfile's lexer, so no
 * tenant string is read as syntax.
 */
export interface E2bDockerfile {
  dockerfile: string;
  /** E2B's step name (`base`, `1`…, `finalize`) of each Dockerfile instruction, by its 1-based index. */
  stepOf: string[];
  /** The uploads COPY steps read: content hash → the context directory their files are under. */
  uploads: Map<string, string>;
}

/** Where the build starts: an image, or a forkd template (already mapped from E2B's name). */
export type E2bBase = { kind: 'image'; ref: string } | { kind: 'template'; name: string };

/** E2B's own base image and template: forkd's `base` (same `user`, same home). */
const E2B_BASE_IMAGES = new Set(['e2bdev/base', 'e2bdev/base:latest', 'docker.io/e2bdev/base', 'docker.io/e2bdev/base:latest']);

/** E2B's templates all have `user` (uid 1000, home /home/user): an image without one gets it. */
const PROVISION_USER = 'id -u user >/dev/null 2>&1 || useradd -m -u 1000 -s /bin/sh user 2>/dev/null || adduser -D -u 1000 user; mkdir -p /home/user && chown user /home/user';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const USER_NAME = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}(:[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63})?$/;

const invalid = (step: string, msg: string) => new ForkdError('INVALID_ARGUMENT', msg, { step });

/** A word Dockerfile's lexer reads back as exactly `v` (single quotes keep everything; `'` is escaped outside them). */
export function dockerfileWord(v: string): string {
  return `'${v.split("'").join("'\\''")}'`;
}

/** Whether a command can stand as a shell-form RUN/CMD line (one line, not read as JSON, flags or a continuation). */
function shellFormSafe(cmd: string): boolean {
  return cmd.trim() !== '' && !/[\r\n]/.test(cmd) && !/^\s*(\[|--)/.test(cmd) && !/\\\s*$/.test(cmd);
}

function commandLine(keyword: 'RUN' | 'CMD', cmd: string): string {
  return shellFormSafe(cmd) ? `${keyword} ${cmd}` : `${keyword} ${JSON.stringify([...BASH_OR_SH, cmd])}`;
}

function noNewline(step: string, what: string, v: string): string {
  if (/[\r\n]/.test(v)) throw invalid(step, `${what} must be one line`);
  return v;
}

class Lines {
  readonly text: string[] = [];
  readonly stepOf: string[] = [''];
  /** The user steps run as; undefined: the base template's own (unknown here). */
  user: string | undefined;

  add(line: string, step: string): void {
    this.text.push(line);
    this.stepOf.push(step);
  }

  setUser(u: string, step: string): void {
    if (!USER_NAME.test(u)) throw invalid(step, `invalid user ${JSON.stringify(u.slice(0, 60))}`);
    this.add(`USER ${u}`, step);
    this.user = u;
  }
}

function baseLines(l: Lines, base: E2bBase, force: boolean, buildId: string): void {
  const e2bBase = base.kind === 'image' ? E2B_BASE_IMAGES.has(base.ref) : base.name === 'base';
  if (base.kind === 'image' && !e2bBase && !/^\S+$/.test(base.ref)) throw invalid('base', `invalid image reference ${JSON.stringify(base.ref.slice(0, 80))}`);
  l.add(base.kind === 'template' || e2bBase ? `FROM template:${base.kind === 'template' ? base.name : 'base'}` : `FROM ${base.ref}`, 'base');
  l.add(`SHELL ${JSON.stringify(BASH_OR_SH)}`, 'base');
  // A new key from here on: every later step runs again (skipCache).
  if (force) l.add(`LABEL forkd.e2b.force=${buildId}`, 'base');
  if (base.kind === 'image' && !e2bBase) {
    l.add('USER root', 'base');
    l.add(`RUN ${JSON.stringify(['/bin/sh', '-c', PROVISION_USER])}`, 'base');
  }
  if (base.kind === 'image' || e2bBase) {
    l.setUser('user', 'base');
    l.add('WORKDIR /home/user', 'base');
  }
}

function copyLine(l: Lines, step: string, args: readonly string[], hash: string | undefined, uploads: Map<string, string>): void {
  const [src, dest, user, mode] = args;
  if (!src || !dest || !hash) throw invalid(step, 'COPY needs a source, a destination and its files hash');
  const clean = posix.normalize(src);
  if (posix.isAbsolute(src) || clean === '..' || clean.startsWith('../')) throw invalid(step, `COPY source ${JSON.stringify(src.slice(0, 80))} must be inside the context`);
  const dir = uploads.get(hash) ?? `files-${hash}`;
  uploads.set(hash, dir);
  const owner = user || l.user;
  if (owner !== undefined && !USER_NAME.test(owner)) throw invalid(step, `invalid COPY user ${JSON.stringify(owner.slice(0, 60))}`);
  if (mode && !/^[0-7]{3,4}$/.test(mode)) throw invalid(step, `invalid COPY mode ${JSON.stringify(mode.slice(0, 10))}`);
  // A wildcard copies what it matches into a directory (E2B's `copy('folder/*', 'folder')`).
  const into = /[*?[]/.test(src) && !dest.endsWith('/') ? `${dest}/` : dest;
  const flags = `${owner ? ` --chown=${owner}` : ''}${mode ? ` --chmod=${mode}` : ''}`;
  l.add(`COPY${flags} ${JSON.stringify([dockerfileWord(posix.join(dir, clean)), dockerfileWord(noNewline(step, 'a COPY destination', into))])}`, step);
}

function stepLines(l: Lines, s: E2bTemplateBody['steps'][number], step: string, uploads: Map<string, string>): void {
  switch (s.type) {
    case 'RUN': {
      const [cmd, user] = s.args;
      if (!cmd?.trim()) throw invalid(step, 'RUN needs a command');
      const before = l.user;
      if (user && user !== before) l.setUser(user, step);
      l.add(commandLine('RUN', cmd), step);
      // The user is the step's only: the next steps run as before (root when the base's own was unknown).
      if (user && user !== before) l.setUser(before ?? 'root', step);
      return;
    }
    case 'COPY':
      return copyLine(l, step, s.args, s.filesHash, uploads);
    case 'ENV': {
      const pairs: string[] = [];
      for (let i = 0; i + 1 < s.args.length; i += 2) {
        const [k, v] = [s.args[i]!, s.args[i + 1]!];
        if (!ENV_NAME.test(k)) throw invalid(step, `invalid environment variable name ${JSON.stringify(k.slice(0, 60))}`);
        pairs.push(`${k}=${dockerfileWord(noNewline(step, `the value of ${k}`, v))}`);
      }
      if (pairs.length) l.add(`ENV ${pairs.join(' ')}`, step);
      return;
    }
    case 'WORKDIR': {
      const dir = s.args[0];
      if (!dir) throw invalid(step, 'WORKDIR needs a path');
      return l.add(`WORKDIR ${dockerfileWord(noNewline(step, 'a workdir', dir))}`, step);
    }
    case 'USER':
      return l.setUser(s.args[0] ?? '', step);
  }
}

/** The Dockerfile of an E2B template program; `buildId` makes forced steps' keys new. */
export function e2bDockerfile(t: E2bTemplateBody, base: E2bBase, buildId: string): E2bDockerfile {
  const l = new Lines();
  const uploads = new Map<string, string>();
  baseLines(l, base, t.force === true, buildId);
  t.steps.forEach((s, i) => {
    const step = String(i + 1);
    if (s.force && t.force !== true) l.add(`LABEL forkd.e2b.force=${buildId}`, step);
    stepLines(l, s, step, uploads);
  });
  if (t.startCmd) l.add(commandLine('CMD', t.startCmd), 'finalize');
  return { dockerfile: `${l.text.join('\n')}\n`, stepOf: l.stepOf, uploads };
}
