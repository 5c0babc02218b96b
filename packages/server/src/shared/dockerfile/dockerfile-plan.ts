import { posix } from 'node:path';
import { TEMPLATE_NAME_PATTERN } from '@forkd/protocol';
import type { Instruction, ParsedDockerfile } from './dockerfile-parser.js';
import { expandWord, expandWords, keyValues, SubstitutionError, type Vars } from './dockerfile-words.js';

/** Where a Dockerfile's build starts: an image reference, or a forkd template (`FROM template:NAME`). */
export type FromSource = { kind: 'image'; ref: string } | { kind: 'template'; name: string };

/** What the base gives the steps: an image's config (or a template's image defaults). */
export interface BaseDefaults {
  env: Record<string, string>;
  cwd?: string | undefined;
  user?: string | undefined;
  entrypoint?: string[] | undefined;
  cmd?: string[] | undefined;
}

/** What a RUN runs with: the sandbox's env, cwd and user at that step, and the ARGs in effect (in its env only). */
export interface StepState {
  env: Record<string, string>;
  args: Record<string, string>;
  cwd: string;
  user?: string | undefined;
}

interface StepCommon {
  /** 1-based index among all instructions. */
  index: number;
  instruction: string;
  /** The step after substitution, canonical: what its cache key is made of (with its parent's key and any copied files). */
  material: string;
}
export type RunStep = StepCommon & { kind: 'run'; argv: string[]; state: StepState };
export type CopyStep = StepCommon & { kind: 'copy'; add: boolean; sources: string[]; dest: string; destIsDir: boolean; chown?: string | undefined; chmod?: number | undefined; state: StepState };
export type WorkdirStep = StepCommon & { kind: 'workdir'; path: string };
/** ENV, USER, ARG, LABEL, EXPOSE, CMD, ENTRYPOINT, FROM: no files change. */
export type MetaStep = StepCommon & { kind: 'meta' };
export type Step = RunStep | CopyStep | WorkdirStep | MetaStep;

export interface DockerfilePlan {
  steps: Step[];
  final: { env: Record<string, string>; cwd?: string | undefined; user?: string | undefined; start?: string[] | undefined };
}

export type PlanResult<T> = { ok: true; value: T } | { ok: false; error: string; line: number };

class PlanError extends Error {}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** What all steps may expand to, and a template's env (a sandbox's env value is at most 64 KiB, as the API's). */
const MAX_PLAN_BYTES = 16 * 1024 * 1024;
const MAX_ENV_BYTES = 1024 * 1024;
const MAX_ENV_VALUE = 65536;
const USER_NAME = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}$/;
const UNSUPPORTED: Record<string, string> = {
  HEALTHCHECK: 'HEALTHCHECK is not supported',
  VOLUME: 'VOLUME is not supported: a sandbox keeps all of its files',
  STOPSIGNAL: 'STOPSIGNAL is not supported',
  ONBUILD: 'ONBUILD is not supported',
};
const ARCHIVE = /\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz|tar\.zst)$/i;
const URL = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/|git@)/;

function attempt<T>(line: () => number, f: () => T): PlanResult<T> {
  try {
    return { ok: true, value: f() };
  } catch (err) {
    if (err instanceof PlanError || err instanceof SubstitutionError) return { ok: false, error: `line ${line()}: ${err.message}`, line: line() };
    throw err;
  }
}

/** ARGs before FROM take build args or their defaults: they are what FROM (and a later bare `ARG NAME`) may use. */
function globalArgs(df: ParsedDockerfile, buildArgs: Vars, upTo: number): Record<string, string> {
  const args: Record<string, string> = {};
  for (const ins of df.instructions.slice(0, upTo)) {
    for (const { key, value } of keyValues(expandWords(ins.args, args, df.escape))) {
      if (!ENV_NAME.test(key)) throw new PlanError(`invalid ARG name ${JSON.stringify(key.slice(0, 60))}`);
      const v = buildArgs[key] ?? value;
      if (v !== undefined) args[key] = v;
    }
  }
  return args;
}

/** The FROM: its source after the global ARGs are substituted. Only one FROM (no multi-stage builds). */
export function resolveFrom(df: ParsedDockerfile, buildArgs: Vars = {}): PlanResult<{ from: FromSource; at: number }> {
  let line = 1;
  return attempt(
    () => line,
    () => {
      const at = df.instructions.findIndex((i) => i.keyword !== 'ARG');
      const ins = df.instructions[at];
      if (!ins || ins.keyword !== 'FROM') {
        line = ins?.line ?? 1;
        throw new PlanError(`${ins?.keyword ?? 'the end'} before FROM: a Dockerfile starts with FROM (ARGs may come first)`);
      }
      line = ins.line;
      const later = df.instructions.slice(at + 1).find((i) => i.keyword === 'FROM');
      if (later) {
        line = later.line;
        throw new PlanError('a second FROM: multi-stage builds are not supported');
      }
      for (const f of ins.flags) if (f.name !== 'platform' || (f.value !== 'linux/amd64' && f.value !== '$BUILDPLATFORM' && f.value !== '$TARGETPLATFORM')) throw new PlanError(`FROM --${f.name}${f.value !== undefined ? `=${f.value}` : ''} is not supported (sandboxes run linux/amd64)`);
      const words = expandWords(ins.args, globalArgs(df, buildArgs, at), df.escape);
      if (words.length !== 1 && !(words.length === 3 && words[1]!.toUpperCase() === 'AS')) throw new PlanError('FROM takes an image or template:NAME, and optionally AS NAME');
      const src = words[0]!;
      if (src.startsWith('template:')) {
        const name = src.slice('template:'.length);
        if (!TEMPLATE_NAME_PATTERN.test(name)) throw new PlanError(`invalid template name ${JSON.stringify(name.slice(0, 80))}`);
        return { from: { kind: 'template', name }, at };
      }
      if (src === 'scratch') throw new PlanError('FROM scratch is not supported: start from an image or template:NAME');
      return { from: { kind: 'image', ref: src }, at };
    },
  );
}

/**
 * Every instruction as a step, with variables substituted as Docker does
 * (ENV over ARG, each ENV's pairs against the env before it), the state a
 * RUN or COPY runs with, and the template's final env, cwd, user and start
 * command (ENTRYPOINT then CMD; an ENTRYPOINT drops the base's CMD).
 */
export function planDockerfile(df: ParsedDockerfile, base: BaseDefaults, buildArgs: Vars = {}): PlanResult<DockerfilePlan> {
  let line = 1;
  return attempt(
    () => line,
    () => {
      const from = resolveFrom(df, buildArgs);
      if (!from.ok) {
        line = from.line;
        throw new PlanError(from.error.replace(/^line \d+: /, ''));
      }
      const global = globalArgs(df, buildArgs, from.value.at);
      const s: Mutable = { env: { ...base.env }, args: {} as Record<string, string>, cwd: base.cwd ?? '/', user: base.user, entrypoint: base.entrypoint, cmd: base.cmd, shell: [...DEFAULT_SHELL] };
      const steps: Step[] = [];
      let total = 0;
      df.instructions.forEach((ins, i) => {
        line = ins.line;
        const common = { index: i + 1, instruction: ins.text };
        if (i <= from.value.at) {
          steps.push({ ...common, kind: 'meta', material: `${ins.keyword} ${JSON.stringify(i < from.value.at ? ins.args : from.value.from)}` });
          return;
        }
        const made = step(ins, common, s, global, buildArgs, df.escape);
        if ((total += made.material.length) > MAX_PLAN_BYTES) throw new PlanError(`the Dockerfile expands to more than ${MAX_PLAN_BYTES} bytes`);
        if (ins.keyword === 'ENV' && Object.entries(s.env).reduce((n, [k, v]) => n + k.length + v.length, 0) > MAX_ENV_BYTES) throw new PlanError(`the env is larger than ${MAX_ENV_BYTES} bytes`);
        steps.push(made);
      });
      const start = [...(s.entrypoint ?? []), ...(s.cmd ?? [])];
      return { steps, final: { env: s.env, cwd: s.cwd === '/' && !base.cwd ? undefined : s.cwd, user: s.user, ...(start.length ? { start } : {}) } };
    },
  );
}

type Mutable = { env: Record<string, string>; args: Record<string, string>; cwd: string; user: string | undefined; entrypoint: string[] | undefined; cmd: string[] | undefined; shell: string[] };

/** What runs a shell-form RUN, CMD or ENTRYPOINT until a SHELL says otherwise (as Docker's). */
export const DEFAULT_SHELL: readonly string[] = ['/bin/sh', '-c'];

/** `SHELL ["exe", "args"...]`: JSON form only, as Docker's. */
export function shellOf(ins: Instruction): string[] {
  if (!ins.json || ins.json.length === 0 || ins.json[0] === '') throw new PlanError('SHELL takes a JSON array: SHELL ["/bin/bash", "-c"]');
  return ins.json;
}

function step(ins: Instruction, common: { index: number; instruction: string }, s: Mutable, global: Vars, buildArgs: Vars, escape: string): Step {
  const vars = { ...s.args, ...s.env };
  const state = (): StepState => ({ env: { ...s.env }, args: { ...s.args }, cwd: s.cwd, user: s.user });
  const meta = (payload: unknown): Step => ({ ...common, kind: 'meta', material: `${ins.keyword} ${JSON.stringify(payload)}` });
  const noFlags = () => {
    if (ins.flags.length) throw new PlanError(`${ins.keyword} --${ins.flags[0]!.name} is not supported`);
  };
  switch (ins.keyword) {
    case 'RUN': {
      noFlags();
      const argv = ins.json ?? [...s.shell, ins.args];
      if (argv.length === 0 || argv[0] === '' || (!ins.json && !ins.args)) throw new PlanError('RUN needs a command');
      return { ...common, kind: 'run', argv, state: state(), material: `RUN ${JSON.stringify({ argv, args: s.args })}` };
    }
    case 'COPY':
    case 'ADD':
      return copyStep(ins, common, state(), vars, escape);
    case 'WORKDIR': {
      const p = expandWord(ins.args, vars, escape);
      if (!p || p.includes('\0')) throw new PlanError('WORKDIR needs a path');
      s.cwd = posix.resolve(s.cwd, p);
      return { ...common, kind: 'workdir', path: s.cwd, material: `WORKDIR ${JSON.stringify(s.cwd)}` };
    }
    case 'ENV': {
      const pairs = envPairs(ins.args, vars, escape);
      for (const [k, v] of pairs) s.env[k] = v;
      return meta(pairs);
    }
    case 'ARG':
      return meta(declareArgs(ins.args, s, vars, global, buildArgs, escape));
    case 'USER': {
      const u = expandWord(ins.args, vars, escape).split(':')[0]!;
      if (!USER_NAME.test(u)) throw new PlanError(`invalid USER ${JSON.stringify(u.slice(0, 60))}`);
      s.user = u;
      return meta(u);
    }
    case 'CMD':
    case 'ENTRYPOINT': {
      const argv = ins.json ?? (ins.args ? [...s.shell, ins.args] : []);
      if (ins.keyword === 'CMD') s.cmd = argv;
      else {
        s.entrypoint = argv;
        s.cmd = undefined;
      }
      return meta(argv);
    }
    case 'LABEL': {
      const kv = keyValues(expandWords(ins.args, vars, escape));
      if (!kv.length || kv.some((p) => p.value === undefined || !p.key)) throw new PlanError('LABEL takes key=value pairs');
      return meta(kv);
    }
    case 'EXPOSE': {
      const ports = expandWords(ins.args, vars, escape);
      if (!ports.length || ports.some((p) => !/^\d{1,5}(-\d{1,5})?(\/(tcp|udp|sctp))?$/i.test(p))) throw new PlanError('EXPOSE takes ports (80, 53/udp, 8000-8010)');
      return meta(ports);
    }
    case 'MAINTAINER':
      return meta(ins.args);
    case 'SHELL':
      s.shell = shellOf(ins);
      return meta(s.shell);
  }
  throw new PlanError(UNSUPPORTED[ins.keyword] ?? `unknown instruction ${ins.keyword}`);
}

/** `ARG NAME[=default]...` after FROM: a build arg's value, else its default, else the global ARG's. */
function declareArgs(args: string, s: Mutable, vars: Vars, global: Vars, buildArgs: Vars, escape: string): [string, string | undefined][] {
  const declared: [string, string | undefined][] = [];
  for (const { key, value } of keyValues(expandWords(args, vars, escape))) {
    if (!ENV_NAME.test(key)) throw new PlanError(`invalid ARG name ${JSON.stringify(key.slice(0, 60))}`);
    const v = buildArgs[key] ?? value ?? global[key];
    if (v !== undefined) s.args[key] = v;
    declared.push([key, v]);
  }
  if (!declared.length) throw new PlanError('ARG needs a name');
  return declared;
}

/** `ENV K=V K2="V 2"`, or the old `ENV K the rest of the line`; every value against the env before this ENV. */
function envPairs(args: string, vars: Vars, escape: string): [string, string][] {
  const words = expandWords(args, vars, escape);
  if (!words.length) throw new PlanError('ENV needs a name and a value');
  let pairs: [string, string][];
  if (!words[0]!.includes('=')) {
    const m = /^(\S+)\s+([\s\S]*)$/.exec(args);
    if (!m) throw new PlanError(`ENV ${words[0]!.slice(0, 60)} needs a value`);
    pairs = [[expandWord(m[1]!, vars, escape), expandWord(m[2]!, vars, escape)]];
  } else {
    pairs = keyValues(words).map(({ key, value }) => {
      if (value === undefined) throw new PlanError(`ENV ${JSON.stringify(key.slice(0, 60))} has no =value`);
      return [key, value];
    });
  }
  for (const [k, v] of pairs) {
    if (!ENV_NAME.test(k)) throw new PlanError(`invalid ENV name ${JSON.stringify(k.slice(0, 60))}`);
    if (v.length > MAX_ENV_VALUE) throw new PlanError(`ENV ${k} is longer than ${MAX_ENV_VALUE} bytes`);
  }
  return pairs;
}

function copyStep(ins: Instruction, common: { index: number; instruction: string }, state: StepState, vars: Vars, escape: string): CopyStep {
  const add = ins.keyword === 'ADD';
  let chown: string | undefined;
  let chmod: number | undefined;
  for (const f of ins.flags) {
    if (f.name === 'chown' && f.value) chown = expandWord(f.value, vars, escape);
    else if (f.name === 'chmod' && f.value && /^[0-7]{3,4}$/.test(f.value)) chmod = parseInt(f.value, 8);
    else if (f.name === 'link') continue;
    else if (f.name === 'from') throw new PlanError(`${ins.keyword} --from is not supported (multi-stage builds are not)`);
    else throw new PlanError(`${ins.keyword} --${f.name}${f.value !== undefined ? `=${f.value}` : ''} is not supported`);
  }
  const words = ins.json ? ins.json.map((w) => expandWord(w, vars, escape)) : expandWords(ins.args, vars, escape);
  if (words.length < 2) throw new PlanError(`${ins.keyword} needs a source and a destination`);
  const sources = words.slice(0, -1);
  const rawDest = words.at(-1)!;
  for (const src of sources) {
    if (URL.test(src)) throw new PlanError(`${ins.keyword} from a URL is not supported: builds run offline; put the file in the context`);
    if (add && ARCHIVE.test(src)) throw new PlanError(`ADD of an archive (which Docker unpacks) is not supported: COPY it and unpack it with RUN`);
  }
  const destIsDir = rawDest.endsWith('/') || rawDest === '.' || rawDest.endsWith('/.') || sources.length > 1 || sources.some((x) => /[*?[]/.test(x));
  if (destIsDir && !(rawDest.endsWith('/') || rawDest === '.' || rawDest.endsWith('/.'))) throw new PlanError(`${ins.keyword} with more than one source (or a wildcard) needs a destination ending with /`);
  const dest = posix.resolve(state.cwd, rawDest);
  return { ...common, kind: 'copy', add, sources, dest, destIsDir, chown, chmod, state, material: `${ins.keyword} ${JSON.stringify({ sources, dest, destIsDir, chown, chmod })}` };
}
