/**
 * A Dockerfile's text as instructions (untrusted: a tenant's file). This is
 * the lexical layer only — line continuations, comments, parser directives,
 * flags and JSON (exec) form, as Docker's parser reads them; what each
 * instruction means, with variables substituted, is dockerfile-plan.ts's.
 */

export interface Instruction {
  /** Upper-cased keyword. */
  keyword: string;
  /** 1-based line the instruction starts on. */
  line: number;
  /** `--name[=value]` flags before the arguments, in order (value undefined for a bare flag). */
  flags: { name: string; value: string | undefined }[];
  /** The arguments after the flags, continuations joined (shell form). */
  args: string;
  /** The arguments as a JSON array of strings, when written so (exec form). */
  json?: string[] | undefined;
  /** The instruction as written, continuations joined: what progress shows. */
  text: string;
}

export interface ParsedDockerfile {
  instructions: Instruction[];
  /** The escape character (`\` unless a `# escape=` directive says `` ` ``). */
  escape: string;
}

export type DockerfileResult = { ok: true; value: ParsedDockerfile } | { ok: false; error: string; line: number };

export const MAX_INSTRUCTIONS = 1000;
/** Instructions with flags, and so whose leading `--x` words are flags (as Docker's parser). */
const FLAGGED = new Set(['FROM', 'RUN', 'COPY', 'ADD', 'HEALTHCHECK']);
/** Instructions whose arguments may be a JSON array. */
const JSON_FORM = new Set(['RUN', 'CMD', 'ENTRYPOINT', 'COPY', 'ADD', 'SHELL', 'VOLUME']);

const fail = (line: number, error: string): DockerfileResult => ({ ok: false, error: `line ${line}: ${error}`, line });

/** Parser directives: `# name=value` lines before anything else; only `escape` changes parsing. */
function directives(lines: readonly string[]): { escape: string; next: number } | { error: string; line: number } {
  let escape = '\\';
  let i = 0;
  const seen = new Set<string>();
  for (; i < lines.length; i++) {
    const m = /^#\s*([A-Za-z]+)\s*=\s*(\S*)\s*$/.exec(lines[i]!);
    if (!m) break;
    const name = m[1]!.toLowerCase();
    if (seen.has(name)) return { error: `the ${name} directive is given twice`, line: i + 1 };
    seen.add(name);
    if (name === 'escape') {
      if (m[2] !== '\\' && m[2] !== '`') return { error: 'the escape directive takes \\ or `', line: i + 1 };
      escape = m[2];
    }
  }
  return { escape, next: i };
}

const isComment = (l: string) => /^\s*#/.test(l);
const isBlank = (l: string) => /^\s*$/.test(l);

/** A line ending with the escape character (trailing whitespace aside) continues on the next. */
function continues(l: string, escape: string): string | undefined {
  const t = l.replace(/[ \t]+$/, '');
  return t.endsWith(escape) ? t.slice(0, -1) : undefined;
}

export function parseDockerfile(text: string): DockerfileResult {
  if (text.includes('\0')) return fail(1, 'the Dockerfile holds a NUL byte');
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const d = directives(lines);
  if ('error' in d) return fail(d.line, d.error);
  const instructions: Instruction[] = [];
  for (let i = d.next; i < lines.length; i++) {
    const first = lines[i]!;
    if (isBlank(first) || isComment(first)) continue;
    const start = i + 1;
    let joined = '';
    let cur: string | undefined = first;
    for (;;) {
      const head = continues(cur, d.escape);
      if (head === undefined) {
        joined += cur;
        break;
      }
      joined += head;
      // Comment and empty lines inside a continuation are dropped, as Docker does.
      do i++;
      while (i < lines.length && (isComment(lines[i]!) || isBlank(lines[i]!)));
      if (i >= lines.length) break;
      cur = lines[i]!;
    }
    // A line that was only an escape (and what continued it was blank): no instruction.
    if (!joined.trim()) continue;
    if (instructions.length >= MAX_INSTRUCTIONS) return fail(start, `more than ${MAX_INSTRUCTIONS} instructions`);
    const r = instruction(joined.trim(), start);
    if ('error' in r) return fail(start, r.error);
    instructions.push(r);
  }
  if (instructions.length === 0) return fail(1, 'the Dockerfile has no instructions');
  return { ok: true, value: { instructions, escape: d.escape } };
}

function instruction(text: string, line: number): Instruction | { error: string } {
  const m = /^(\S+)\s*([\s\S]*)$/.exec(text)!;
  const keyword = m[1]!.toUpperCase();
  if (!/^[A-Z]+$/.test(keyword)) return { error: `unknown instruction ${JSON.stringify(m[1]!.slice(0, 40))}` };
  let rest = m[2]!;
  const flags: Instruction['flags'] = [];
  if (FLAGGED.has(keyword)) {
    for (;;) {
      const f = /^--([A-Za-z][A-Za-z0-9-]*)(?:=(\S*))?(?:\s+|$)/.exec(rest);
      if (!f) break;
      flags.push({ name: f[1]!.toLowerCase(), value: f[2] });
      rest = rest.slice(f[0].length);
    }
  }
  const args = rest.trim();
  return { keyword, line, flags, args, json: JSON_FORM.has(keyword) ? jsonForm(args) : undefined, text };
}

/** A JSON array of strings, or undefined (then Docker takes the arguments as shell form). */
function jsonForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const v: unknown = JSON.parse(args);
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
  } catch {
    return undefined;
  }
}
