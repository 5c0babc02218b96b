import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DebianPackageName, parseImageRef, TEMPLATE_NAME_PATTERN } from '@forkd/protocol';
import type { BuildStep, BuildTemplateRequest, TemplateInfo } from '@forkd/sdk';
import { readBuildContext } from '@forkd/sdk/build-context';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { loadServer } from '../load-server.js';
import { BuildEstimate } from '../build-estimate.js';
import { DurationMemory } from '../duration-memory.js';
import { formatRemaining } from '@forkd/protocol/progress-estimate';
import { formatAge, printJson, table } from '../format.js';
import { reportError } from '../report-error.js';
import { styleFor } from '../style.js';
import { UsageError } from '../usage-error.js';
import { parseTemplateNetworkArgs, runTemplateNetwork, TEMPLATE_NETWORK_OPTIONS, TEMPLATE_NETWORK_SUMMARY, TEMPLATE_NETWORK_SYNOPSIS, type TemplateNetworkArgs } from './template-network.js';

const USAGE = `Usage: forkd template ls [--json]
       forkd template build NAME [--from TEMPLATE | --from-image REF [--registry-user USER]] [--apt PKG]... [--shared] [--run CMD]... [--start CMD [--ready CMD]] [--json]
       forkd template build NAME --recipe code-interpreter [--json]
       forkd template build NAME --dockerfile PATH [--context DIR] [--build-arg NAME=VALUE]... [--json]
       forkd template rm NAME...
${TEMPLATE_NETWORK_SYNOPSIS}
Templates are what sandboxes are created from (forkd create --template NAME).

  ls      Lists the templates. A WARM one starts its sandboxes with the
          processes of its --start command already running.
  build   Builds template NAME: a sandbox from --from runs each --run command
          in order (by bash -lc, as root; one failing fails the build), then
          its files become the template. With --start, that command is left
          running and its memory kept too: a warm template. The build's output
          is shown on stderr as it runs; prints NAME when done. Building over
          an existing name replaces it. Interrupting stops waiting only: the
          build carries on on the server.
          With --from-image, the build starts from an OCI image instead:
          a registry reference (python:3.12-slim is Docker Hub's), or with an
          admin key a file on the server (oci-archive:PATH,
          docker-archive:PATH, oci:DIR[:TAG]). Its Env, WorkingDir and User
          become its sandboxes' defaults, and its Entrypoint and Cmd the start
          command unless --start is given.
          With --apt (admin keys), Debian packages are installed first: the
          server's apt fetches them from its own sources (builds are
          offline) and apt installs them in the build sandbox.
          With --shared (admin keys), every tenant sees and uses the template
          (no owner, as base); only admin keys rebuild it.
          --recipe code-interpreter builds the code interpreter (admin keys,
          shared):
          Jupyter's Python kernel with matplotlib and pandas behind the
          server E2B's @e2b/code-interpreter SDK talks to (port 49999).
          With --dockerfile, the build follows a Dockerfile: FROM an image
          or template:NAME, RUN, COPY/ADD from the context (--context, default
          the Dockerfile's directory; .dockerignore honoured), ENV, WORKDIR,
          USER, ARG, CMD/ENTRYPOINT. Each step is cached: a rebuild shows
          CACHED for the steps whose inputs did not change and runs the rest.
  rm      Deletes templates (not base). Prints each name deleted; carries on
          past failures and exits 1 if any failed.
${TEMPLATE_NETWORK_SUMMARY}
Options:
      --from TEMPLATE   build: the template to start from (default base)
      --from-image REF  build: the OCI image to start from
      --registry-user USER
                        build: the registry's user for --from-image; the
                        password or token is read from FORKD_REGISTRY_PASSWORD
      --apt PKG         build: a Debian package to install (repeatable)
      --shared          build: for every tenant, as base is (admin keys)
      --recipe NAME     build: a recipe of forkd's (code-interpreter)
      --run CMD         build: a setup command (repeatable, run in order)
      --dockerfile PATH build: the Dockerfile to build
      --context DIR     build: the files COPY and ADD take (default: the
                        Dockerfile's directory)
      --build-arg NAME=VALUE
                        build: a value for the Dockerfile's ARG NAME (repeatable)
      --start CMD       build: a long-running command left running in the template
      --ready CMD       build: run until it exits 0 before the template is
                        taken (e.g. curl -sf localhost:8000/health), at most 120 s
${TEMPLATE_NETWORK_OPTIONS}      --json            ls: print the templates as a JSON array;
                        build: print the template as JSON; network: print it as JSON
`;

const SUBCOMMANDS = ['ls', 'build', 'rm', 'network'] as const;

export type TemplateArgs =
  | { sub: 'ls'; json: boolean }
  | { sub: 'build'; request: BuildTemplateRequest; json: boolean; dockerfile?: { path: string; context: string } }
  | { sub: 'build'; recipe: 'code-interpreter'; name: string; json: boolean }
  | { sub: 'rm'; names: string[] }
  | ({ sub: 'network' } & TemplateNetworkArgs);

function templateName(what: string, value: string): string {
  if (!TEMPLATE_NAME_PATTERN.test(value)) {
    throw new UsageError(`invalid ${what} ${JSON.stringify(value)}: use a lowercase letter, then up to 62 lowercase letters, digits or '-'`);
  }
  return value;
}

export function parseTemplateLsArgs(argv: string[]): { json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  expectPositionals(positionals, []);
  return { json: !!values.json };
}

export function parseTemplateArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): TemplateArgs {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub.startsWith('-')) throw new UsageError(`missing subcommand: ${SUBCOMMANDS.join(', ')}`);
  switch (sub) {
    case 'ls':
      return { sub, ...parseTemplateLsArgs(rest) };
    case 'build': {
      const { values, positionals } = parseOptions({
        args: rest,
        allowPositionals: true,
        options: {
          from: { type: 'string' },
          'from-image': { type: 'string' },
          'registry-user': { type: 'string' },
          shared: { type: 'boolean' },
          apt: { type: 'string', multiple: true },
          recipe: { type: 'string' },
          run: { type: 'string', multiple: true },
          start: { type: 'string' },
          ready: { type: 'string' },
          dockerfile: { type: 'string' },
          context: { type: 'string' },
          'build-arg': { type: 'string', multiple: true },
          json: { type: 'boolean' },
        },
      });
      const [name] = expectPositionals(positionals, ['NAME']);
      if (values.recipe !== undefined) {
        if (values.recipe !== 'code-interpreter') throw new UsageError(`unknown --recipe ${JSON.stringify(values.recipe)}: expected code-interpreter`);
        const others = (['from', 'from-image', 'registry-user', 'apt', 'run', 'start', 'ready'] as const).filter((o) => values[o] !== undefined);
        if (others.length) throw new UsageError(`--recipe excludes --${others.join(', --')}`);
        return { sub, recipe: values.recipe, name: templateName('template name', name!), json: !!values.json };
      }
      const request: BuildTemplateRequest = { name: templateName('template name', name!) };
      if (values.dockerfile !== undefined) return dockerfileArgs(request, values);
      if (values.context !== undefined || values['build-arg'] !== undefined) throw new UsageError('--context and --build-arg go with --dockerfile');
      if (values.from !== undefined) request.from = templateName('--from', values.from);
      if (request.name === (request.from ?? 'base')) throw new UsageError(`template ${request.name} cannot be built from itself`);
      const image = values['from-image'];
      if (image !== undefined) {
        if (values.from !== undefined) throw new UsageError('--from and --from-image exclude each other');
        const ref = parseImageRef(image);
        if (!ref.ok) throw new UsageError(`invalid --from-image ${JSON.stringify(image)}: ${ref.error}`);
        request.fromImage = image;
      }
      if (values['registry-user'] !== undefined) {
        if (image === undefined) throw new UsageError('--registry-user goes with --from-image');
        const password = env.FORKD_REGISTRY_PASSWORD;
        if (!password) throw new UsageError('--registry-user: set FORKD_REGISTRY_PASSWORD to the password or token (never on the command line)');
        request.registryAuth = { username: values['registry-user'], password };
      }
      if (values.apt?.length) {
        const bad = values.apt.find((p) => !DebianPackageName.safeParse(p).success);
        if (bad !== undefined) throw new UsageError(`invalid --apt ${JSON.stringify(bad)}: a Debian package name`);
        if (image !== undefined) throw new UsageError("--apt installs the server's Debian release: not with --from-image");
        request.aptPackages = values.apt;
      }
      if (values.shared) request.shared = true;
      const setup = values.run ?? [];
      if (setup.some((c) => !c.trim())) throw new UsageError('--run needs a command');
      if (setup.length) request.setup = setup;
      if (values.start !== undefined) {
        if (!values.start.trim()) throw new UsageError('--start needs a command');
        request.start = values.start;
      }
      if (values.ready !== undefined) {
        if (values.start === undefined && image === undefined) throw new UsageError('--ready goes with --start');
        if (!values.ready.trim()) throw new UsageError('--ready needs a command');
        request.ready = values.ready;
      }
      return { sub, request, json: !!values.json };
    }
    case 'network':
      return { sub, ...parseTemplateNetworkArgs(rest) };
    case 'rm': {
      const { positionals } = parseOptions({ args: rest, allowPositionals: true, options: {} });
      if (!positionals.length) throw new UsageError('missing NAME');
      return { sub, names: positionals };
    }
  }
  throw new UsageError(`unknown subcommand ${JSON.stringify(sub)}: expected ${SUBCOMMANDS.join(', ')}`);
}

function dockerfileArgs(request: BuildTemplateRequest, values: { dockerfile?: string; context?: string; 'build-arg'?: string[]; json?: boolean; from?: string; 'from-image'?: string; run?: string[]; start?: string; 'registry-user'?: string }): TemplateArgs {
  for (const o of ['from', 'from-image', 'run', 'start'] as const) if (values[o] !== undefined) throw new UsageError(`--${o} and --dockerfile exclude each other`);
  const path = values.dockerfile!;
  if (!path) throw new UsageError('--dockerfile needs a path');
  const buildArgs: Record<string, string> = {};
  for (const a of values['build-arg'] ?? []) {
    const eq = a.indexOf('=');
    // `--build-arg NAME` alone takes NAME from the environment, as docker build does.
    const [k, v] = eq < 0 ? [a, process.env[a]] : [a.slice(0, eq), a.slice(eq + 1)];
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new UsageError(`invalid --build-arg ${JSON.stringify(a)}: NAME=VALUE`);
    if (v !== undefined) buildArgs[k] = v;
  }
  if (Object.keys(buildArgs).length) request.buildArgs = buildArgs;
  return { sub: 'build', request, json: !!values.json, dockerfile: { path, context: values.context ?? dirname(path) } };
}

/** The Dockerfile's text and the context directory's files, read into the request. */
async function withDockerfile(request: BuildTemplateRequest, df: { path: string; context: string }): Promise<BuildTemplateRequest> {
  const text = await readFile(df.path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot read --dockerfile ${df.path}: ${err.code ?? err.message}`);
  });
  const { context, skipped } = await readBuildContext(df.context);
  for (const p of skipped) process.stderr.write(`context: left out ${p} (not a file, directory or link)\n`);
  return { ...request, dockerfile: text, context };
}

export function templatesTable(templates: readonly TemplateInfo[], now = Date.now()): string {
  const rows = templates.map((t) => [t.name, t.warm ? 'yes' : 'no', t.from ?? '-', formatAge(t.createdAt, now)]);
  return table(['NAME', 'WARM', 'FROM', 'CREATED'], rows);
}

async function listTemplates(json: boolean): Promise<number> {
  const templates = await connect().templates.list();
  if (json) printJson(templates);
  else process.stdout.write(templatesTable(templates));
  return 0;
}

/**
 * Progress lines go to stderr, dimmed on a terminal, so stdout carries only
 * the result; line by line on a terminal too (a build's output streams in
 * between). A Dockerfile step's start says the time left when the
 * template's last build had the same steps.
 */
export function progressPrinter(out: { write(s: string): unknown; isTTY?: boolean } = process.stderr, estimate?: BuildEstimate): (line: string, step?: BuildStep) => void {
  const style = styleFor(out);
  return (line, step) => {
    const left = step && estimate ? estimate.onStep(step) : undefined;
    if (!line) return;
    // A Dockerfile's `Step i/N : ...` and ` ---> CACHED` lines stand out from the commands' output, as docker build's do.
    const look = step ? style.bold : style.dim;
    const text = line
      .split('\n')
      .map((l) => look(l))
      .join('\n');
    out.write(`${text}${left === undefined ? '' : ` ${style.dim(`(${formatRemaining(left)})`)}`}\n`);
  };
}

async function buildTemplate(input: BuildTemplateRequest, json: boolean, dockerfile?: { path: string; context: string }): Promise<number> {
  const request = dockerfile ? await withDockerfile(input, dockerfile) : input;
  // The server does not stop a build whose client went away: say so rather than leave it implied.
  const onInterrupt = () => {
    process.stderr.write(`\nstopped waiting: the build of ${request.name} carries on on the server (see forkd template ls)\n`);
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  try {
    const memory = new DurationMemory();
    const estimate = new BuildEstimate(memory.last(`build:${request.name}`));
    const template = await connect().templates.build(request, { onProgress: progressPrinter(process.stderr, estimate) });
    const ran = estimate.ran;
    if (ran) memory.remember(`build:${request.name}`, ran);
    if (json) printJson(template);
    else process.stdout.write(`${template.name}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onInterrupt);
  }
}

async function removeTemplates(names: readonly string[]): Promise<number> {
  const client = connect();
  let status = 0;
  for (const name of names) {
    try {
      await client.templates.delete(name);
      process.stdout.write(`${name}\n`);
    } catch (err) {
      status = reportError(err);
    }
  }
  return status;
}

export const templateCommand: CliCommand = {
  name: 'template',
  usage: USAGE,
  run(argv) {
    const args = parseTemplateArgs(argv);
    switch (args.sub) {
      case 'ls':
        return listTemplates(args.json);
      case 'build':
        // The recipe ships with the server package: loaded for this build only, not for every template command.
        if ('recipe' in args) return loadServer('template build --recipe').then(({ codeInterpreterRequest }) => codeInterpreterRequest(args.name)).then((r) => buildTemplate(r, args.json));
        return buildTemplate(args.request, args.json, args.dockerfile);
      case 'rm':
        return removeTemplates(args.names);
      case 'network':
        return runTemplateNetwork(args);
    }
  },
};

const LS_USAGE = `Usage: forkd templates [--json]

Lists the templates sandboxes can be created from; the same as
'forkd template ls' (see forkd template --help).

Options:
      --json   print the templates as a JSON array
`;

/** The older name of `template ls`, kept working. */
export const templatesCommand: CliCommand = {
  name: 'templates',
  usage: LS_USAGE,
  async run(argv) {
    return listTemplates(parseTemplateLsArgs(argv).json);
  },
};
