import { ForkdError } from '@forkd/protocol';
import { parseDockerfile, type ParsedDockerfile } from './dockerfile-parser.js';
import { judgedArgv } from './bash-or-sh.js';
import { DEFAULT_SHELL, resolveFrom, type FromSource } from './dockerfile-plan.js';

/** A Dockerfile request's text parsed and its FROM resolved, or INVALID_ARGUMENT naming the line. */
export function dockerfileSource(text: string, buildArgs: Readonly<Record<string, string>> = {}): { df: ParsedDockerfile; from: FromSource } {
  const parsed = parseDockerfile(text);
  if (!parsed.ok) throw new ForkdError('INVALID_ARGUMENT', `Dockerfile ${parsed.error}`, { line: parsed.line });
  const from = resolveFrom(parsed.value, buildArgs);
  if (!from.ok) throw new ForkdError('INVALID_ARGUMENT', `Dockerfile ${from.error}`, { line: from.line });
  return { df: parsed.value, from: from.value.from };
}

/** The template a request builds from: its `from`, a Dockerfile's `FROM template:NAME`, else undefined for an image (`base` for neither). */
export function sourceTemplateOf(req: { from?: string | undefined; fromImage?: string | undefined; dockerfile?: string | undefined; buildArgs?: Record<string, string> | undefined }): string | undefined {
  if (req.dockerfile !== undefined) {
    const { from } = dockerfileSource(req.dockerfile, req.buildArgs);
    return from.kind === 'template' ? from.name : undefined;
  }
  return req.fromImage !== undefined ? undefined : (req.from ?? 'base');
}

/** The commands a Dockerfile runs (RUN), and its start command (ENTRYPOINT, CMD), as argv: what a build's policy judges. */
export function dockerfileCommands(text: string): { what: string; argv: string[] }[] {
  const { df } = dockerfileSource(text);
  const out: { what: string; argv: string[] }[] = [];
  let shell = DEFAULT_SHELL;
  for (const i of df.instructions) {
    // An invalid SHELL fails the build's plan; here it changes nothing.
    if (i.keyword === 'SHELL') shell = i.json?.length && i.json[0] ? i.json : shell;
    if (i.keyword !== 'RUN' && i.keyword !== 'CMD' && i.keyword !== 'ENTRYPOINT') continue;
    const argv = judgedArgv(i.json ?? [...shell, i.args]);
    if (argv.length) out.push({ what: i.keyword === 'RUN' ? `RUN (line ${i.line})` : `${i.keyword} (line ${i.line})`, argv });
  }
  return out;
}

/** The image a Dockerfile starts from (undefined for `FROM template:NAME`): what an image source gate judges. */
export function dockerfileImage(text: string, buildArgs?: Record<string, string>): string | undefined {
  const { from } = dockerfileSource(text, buildArgs);
  return from.kind === 'image' ? from.ref : undefined;
}
