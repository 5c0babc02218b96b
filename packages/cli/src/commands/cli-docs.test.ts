import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { COMMANDS } from './registry.js';

/**
 * `forkd CMD --help` is the only manual most users read: every option a
 * command's parser takes must be in its help, and every option its help
 * offers must be one the parser takes. The options are read from the
 * sources (each `parseOptions({ options })` call of the command's module
 * and the command modules it imports), the help from the commands themselves.
 */
const SRC = fileURLToPath(new URL('../../src/commands/', import.meta.url));
const sources = new Map(readdirSync(SRC).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts')).map((f) => [f.replace(/\.ts$/, ''), ts.createSourceFile(f, readFileSync(SRC + f, 'utf8'), ts.ScriptTarget.Latest, true)]));

/** `{...} as const`, `(...)`, `x satisfies T`: the expression itself. */
function unwrap(e: ts.Expression | undefined): ts.Expression | undefined {
  while (e && (ts.isAsExpression(e) || ts.isParenthesizedExpression(e) || ts.isSatisfiesExpression(e))) e = e.expression;
  return e;
}

const keyName = (n: ts.PropertyName): string | undefined => (ts.isIdentifier(n) || ts.isStringLiteral(n) ? n.text : undefined);

/** `const NAME = {...}` anywhere in the command modules (spreads like NETWORK_LIMIT_OPTIONS). */
function constObject(name: string): ts.ObjectLiteralExpression | undefined {
  for (const sf of sources.values()) {
    let found: ts.ObjectLiteralExpression | undefined;
    const visit = (n: ts.Node): void => {
      const init = ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === name ? unwrap(n.initializer) : undefined;
      if (init && ts.isObjectLiteralExpression(init)) found = init;
      else ts.forEachChild(n, visit);
    };
    visit(sf);
    if (found) return found;
  }
  return undefined;
}

/** Long (`--name`) and short (`-x`) flags an options object defines, through spreads and conditionals. */
function flagsOf(expr: ts.Expression, out: Set<string>): void {
  const e = unwrap(expr)!;
  if (ts.isConditionalExpression(e)) return (flagsOf(e.whenTrue, out), flagsOf(e.whenFalse, out));
  if (ts.isIdentifier(e)) {
    const o = constObject(e.text);
    assert.ok(o, `options object ${e.text}: not found in the command modules`);
    return flagsOf(o, out);
  }
  if (!ts.isObjectLiteralExpression(e)) return;
  for (const p of e.properties) {
    if (ts.isSpreadAssignment(p)) flagsOf(p.expression, out);
    else if (ts.isPropertyAssignment(p)) {
      const name = keyName(p.name);
      if (name !== undefined) out.add(`--${name}`);
      if (ts.isObjectLiteralExpression(p.initializer)) {
        for (const q of p.initializer.properties) if (ts.isPropertyAssignment(q) && keyName(q.name) === 'short' && ts.isStringLiteral(q.initializer)) out.add(`-${q.initializer.text}`);
      }
    }
  }
}

/** The flags of every parseOptions call in a module. */
function moduleFlags(sf: ts.SourceFile): Set<string> {
  const out = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'parseOptions' && n.arguments[0] && ts.isObjectLiteralExpression(n.arguments[0])) {
      for (const p of n.arguments[0].properties) if (ts.isPropertyAssignment(p) && keyName(p.name) === 'options') flagsOf(p.initializer, out);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/**
 * A command's module and the helper modules it imports (statically or on
 * use), transitively; another command's module is that command's (create
 * takes a function of network.ts, not its options).
 */
function reachable(name: string, commandModules: ReadonlySet<string>, seen = new Set<string>()): Set<string> {
  if (seen.has(name) || (seen.size > 0 && commandModules.has(name))) return seen;
  seen.add(name);
  const sf = sources.get(name);
  assert.ok(sf, `no command module ${name}.ts`);
  const visit = (n: ts.Node): void => {
    const spec = ts.isImportDeclaration(n) ? n.moduleSpecifier : ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword ? n.arguments[0] : undefined;
    if (spec && ts.isStringLiteral(spec) && /^\.\/[a-z-]+\.js$/.test(spec.text)) reachable(spec.text.slice(2, -3), commandModules, seen);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return seen;
}

/** Each registry entry's module, from `entry('NAME', ..., import('./MODULE.js'))`. */
function entryModules(): Map<string, string> {
  const text = sources.get('registry')!.text;
  const out = new Map<string, string>();
  for (const m of text.matchAll(/entry\('([a-z-]+)',.*?import\('\.\/([a-z-]+)\.js'\)/g)) out.set(m[1]!, m[2]!);
  return out;
}

/** Flags a help text offers: those in its usage and example lines (up to a `--`) and option lines (`  -x, --name ...`), not ones named in prose. */
export function offeredFlags(usage: string): Set<string> {
  const out = new Set<string>();
  for (const line of usage.split('\n')) {
    const synopsis = /^(Usage:|\s+forkd )/.test(line) || /^\s+\[--/.test(line);
    const option = /^\s+(-[A-Za-z], )?--[a-z][a-z-]*/.exec(line)?.[0];
    // An example's command after `--` has options of its own (bash -lc).
    const flags = synopsis ? line.split(' -- ')[0]!.match(/(?<![\w-])--?[A-Za-z][a-z-]*/g) ?? [] : option ? option.trim().split(/,\s*/) : [];
    for (const f of flags) out.add(f);
  }
  return out;
}

/** The flags a command's module takes (its parseOptions calls and its helpers'). */
function takenFlags(command: string): Set<string> {
  const modules = entryModules();
  const takes = new Set<string>();
  for (const m of reachable(modules.get(command)!, new Set(modules.values()))) for (const f of moduleFlags(sources.get(m)!)) takes.add(f);
  return takes;
}

/**
 * `forkd` command lines in a markdown text's ```sh blocks: the command and the
 * flags given to it (quoted strings and what follows `--` left out; `\`
 * continuations joined).
 */
export function shellCommandLines(md: string): Array<{ command: string; flags: string[]; line: string }> {
  const out: Array<{ command: string; flags: string[]; line: string }> = [];
  for (const block of md.matchAll(/^```sh\n([\s\S]*?)^```/gm)) {
    for (const line of block[1]!.replace(/\\\n\s*/g, ' ').split('\n')) {
      const code = line.replace(/\s#.*$/, '').replace(/'[^']*'|"[^"]*"/g, "''");
      // forkd where a command starts: a line's start, after | ; && or $(, past VAR=value assignments.
      for (const m of code.matchAll(/(?:^|[|;(]|&&)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.\/)?forkd ([a-z][a-z-]*)((?:(?! -- |[|;)]).)*)/g)) {
        out.push({ command: m[1]!, flags: m[2]!.match(/(?<![\w-])--?[A-Za-z][a-z-]*/g) ?? [], line });
      }
    }
  }
  return out;
}

test('the registry names a module for every command', () => {
  const modules = entryModules();
  assert.deepEqual([...modules.keys()], COMMANDS.map((c) => c.name));
});

test("every command's --help mentions each of its options, and offers none it does not take", async () => {
  const modules = entryModules();
  const helps = new Map<string, string[]>();
  for (const c of COMMANDS) helps.set(modules.get(c.name)!, [...(helps.get(modules.get(c.name)!) ?? []), (await c.load()).usage]);
  for (const [module, usages] of helps) {
    const takes = takenFlags([...modules].find(([, m]) => m === module)![0]);
    const help = usages.join('\n');
    for (const f of takes) assert.match(help, new RegExp(`(?<![\\w-])${f}(?![\\w-])`), `${module}.ts takes ${f}, which its --help does not mention`);
    for (const f of offeredFlags(help)) assert.ok(takes.has(f), `${module}.ts's --help offers ${f}, which its parser does not take`);
  }
});

test('offeredFlags reads synopses and option lines, not prose', () => {
  const usage = `Usage: forkd x ID [--json] [-f]
       forkd x ls [--all-tenants]
  forkd x ID -- bash -lc 'true'

Times out as its --on-timeout says.

Options:
  -q, --quiet   no bar
      --from-image REF  an image
`;
  assert.deepEqual([...offeredFlags(usage)].sort(), ['--all-tenants', '--from-image', '--json', '--quiet', '-f', '-q']);
});

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const README = readFileSync(ROOT + 'README.md', 'utf8');
const DOCS = ['README.md', ...readdirSync(ROOT + 'docs').filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

test('the README shows every command', () => {
  const shown = new Set([...shellCommandLines(README).map((l) => l.command), ...[...README.matchAll(/`(?:\.\/)?forkd ([a-z][a-z-]*)/g)].map((m) => m[1]!)]);
  for (const c of COMMANDS) assert.ok(shown.has(c.name), `README.md never shows forkd ${c.name}`);
});

test("the docs' forkd command lines use only commands and flags that exist", () => {
  let checked = 0;
  for (const doc of DOCS) {
    for (const { command, flags, line } of shellCommandLines(readFileSync(ROOT + doc, 'utf8'))) {
      assert.ok(COMMANDS.some((c) => c.name === command), `${doc} runs an unknown command: ${line}`);
      const takes = takenFlags(command);
      for (const f of flags) assert.ok(takes.has(f) || f === '--help', `${doc} gives forkd ${command} ${f}, which it does not take: ${line}`);
      checked++;
    }
  }
  assert.ok(checked > 50, `only ${checked} command lines found: is the reader broken?`);
});

test('shellCommandLines reads sh blocks only, without quotes, comments or the command after --', () => {
  const md = "Run `forkd nope --x`.\n```sh\n./forkd exec -b ID -- bash -lc 'ls -la'   # see --json\necho x | forkd cp -q - ID:/a\nid=$(./forkd create --run 'a --b' \\\n   --json)\nkubectl -n forkd get pods\nA=1 B=$(x) forkd ls --json\n```\n";
  assert.deepEqual(
    shellCommandLines(md).map(({ command, flags }) => [command, flags]),
    [['exec', ['-b']], ['cp', ['-q']], ['create', ['--run', '--json']], ['ls', ['--json']]],
  );
});
