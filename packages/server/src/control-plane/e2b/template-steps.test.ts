import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseDockerfile } from '../../shared/dockerfile/dockerfile-parser.js';
import { planDockerfile, type RunStep } from '../../shared/dockerfile/dockerfile-plan.js';
import { expandWord } from '../../shared/dockerfile/dockerfile-words.js';
import { dockerfileCommands } from '../../shared/dockerfile/dockerfile-source.js';
import { E2bTemplateBody } from './template-build-schemas.js';
import { dockerfileWord, e2bDockerfile } from './template-steps.js';

const HASH = 'a'.repeat(64);
const program = (t: unknown) => E2bTemplateBody.parse(t);

function plan(text: string) {
  const df = parseDockerfile(text);
  assert.ok(df.ok, df.ok ? '' : df.error);
  const p = planDockerfile(df.value, { env: {} });
  assert.ok(p.ok, p.ok ? '' : p.error);
  return p.value;
}

test('any string is read back whole from its Dockerfile word ($, quotes, backslashes kept as they are)', () => {
  fc.assert(fc.property(fc.string({ unit: fc.constantFrom('a', ' ', "'", '"', '\\', '$', '{', '}', '`', '=', 'é') }), (v) => assert.equal(expandWord(dockerfileWord(v), { HOME: '/x' }), v)), { numRuns: 3000 });
});

test("an E2B program from E2B's base becomes a Dockerfile the planner takes: user and home first, each step its own, E2B's step names", () => {
  const t = program({
    fromImage: 'e2bdev/base',
    steps: [
      { type: 'COPY', args: ['folder/*', 'folder', '', ''], filesHash: HASH },
      { type: 'RUN', args: ['cat folder/test.txt'] },
      { type: 'ENV', args: ['A', "it's $HOME \\ \"q\"", 'B', ''] },
      { type: 'RUN', args: ['whoami > /tmp/who', 'root'] },
      { type: 'WORKDIR', args: ['/app'] },
    ],
    startCmd: 'echo "Hello, world!"',
    readyCmd: 'sleep 1',
  });
  const df = e2bDockerfile(t, { kind: 'image', ref: 'e2bdev/base' }, 'bld-1');
  assert.match(df.dockerfile, /^FROM template:base\n/);
  assert.deepEqual(df.uploads, new Map([[HASH, `files-${HASH}`]]));
  const p = plan(df.dockerfile);
  const copy = p.steps.find((s) => s.kind === 'copy');
  assert.ok(copy && copy.kind === 'copy');
  assert.deepEqual(copy.sources, [`files-${HASH}/folder/*`]);
  assert.equal(copy.dest, '/home/user/folder');
  assert.equal(copy.destIsDir, true);
  assert.equal(copy.chown, 'user', 'copied files are the current user\'s');
  const runs = p.steps.filter((s): s is RunStep => s.kind === 'run');
  assert.equal(runs[0]!.argv.at(-1), 'cat folder/test.txt');
  assert.equal(runs[0]!.state.user, 'user');
  assert.equal(runs[1]!.state.user, 'root', 'a RUN with its own user');
  assert.deepEqual(p.final.env, { A: "it's $HOME \\ \"q\"", B: '' });
  assert.equal(p.final.user, 'user', 'the user is back after that RUN');
  assert.equal(p.final.cwd, '/app');
  assert.equal(p.final.start?.at(-1), 'echo "Hello, world!"');
  // Each Dockerfile instruction maps to the E2B step it came from.
  const named = p.steps.map((s) => df.stepOf[s.index]);
  assert.deepEqual([...new Set(named)], ['base', '1', '2', '3', '4', '5', 'finalize']);
});

test('commands that cannot be one shell-form line (newlines, a leading [ or --, a trailing backslash) go in exec form, whole', () => {
  for (const cmd of ['echo a\necho b', '[ -f x ] && echo y', '--version', 'echo a \\']) {
    const p = plan(e2bDockerfile(program({ fromTemplate: 'base', steps: [{ type: 'RUN', args: [cmd] }] }), { kind: 'template', name: 'base' }, 'b').dockerfile);
    const run = p.steps.find((s): s is RunStep => s.kind === 'run');
    assert.equal(run?.argv.at(-1), cmd);
  }
});

test('skipCache and a forced step make a new key from where they are; an image base gets E2B\'s user provisioned', () => {
  const t = (force: boolean) => program({ fromImage: 'python:3.12', force, steps: [{ type: 'RUN', args: ['true'] }] });
  const a = plan(e2bDockerfile(t(false), { kind: 'image', ref: 'python:3.12' }, 'b1').dockerfile);
  const b = plan(e2bDockerfile(t(false), { kind: 'image', ref: 'python:3.12' }, 'b2').dockerfile);
  const c = plan(e2bDockerfile(t(true), { kind: 'image', ref: 'python:3.12' }, 'b3').dockerfile);
  const materials = (p: typeof a) => p.steps.map((s) => s.material).join('\n');
  assert.equal(materials(a), materials(b), 'unforced builds share every key');
  assert.notEqual(materials(a), materials(c));
  assert.ok(a.steps.some((s) => s.kind === 'run' && s.argv.join(' ').includes('useradd')));
  const forcedStep = program({ fromTemplate: 'base', steps: [{ type: 'RUN', args: ['one'] }, { type: 'RUN', args: ['two'], force: true }] });
  const d1 = plan(e2bDockerfile(forcedStep, { kind: 'template', name: 'base' }, 'x1').dockerfile).steps.filter((s) => s.kind === 'run');
  const d2 = plan(e2bDockerfile(forcedStep, { kind: 'template', name: 'base' }, 'x2').dockerfile).steps.filter((s) => s.kind === 'run');
  assert.equal(d1[0]!.material, d2[0]!.material);
});

test('what cannot be built is refused with the E2B step it is in', () => {
  const refused: [unknown, RegExp, string][] = [
    [{ fromTemplate: 'base', steps: [{ type: 'ENV', args: ['1A', 'x'] }] }, /invalid environment variable name/, '1'],
    [{ fromTemplate: 'base', steps: [{ type: 'RUN', args: ['true'] }, { type: 'USER', args: ['; exit 1'] }] }, /invalid user/, '2'],
    [{ fromTemplate: 'base', steps: [{ type: 'COPY', args: ['../x', 'y'], filesHash: HASH }] }, /inside the context/, '1'],
    [{ fromTemplate: 'base', steps: [{ type: 'COPY', args: ['x', 'y'] }] }, /files hash/, '1'],
    [{ fromTemplate: 'base', steps: [{ type: 'ENV', args: ['A', 'two\nlines'] }] }, /one line/, '1'],
    [{ fromImage: 'a b', steps: [] }, /invalid image reference/, 'base'],
  ];
  for (const [t, re, step] of refused) {
    const p = program(t);
    const base = p.fromTemplate ? { kind: 'template' as const, name: p.fromTemplate } : { kind: 'image' as const, ref: p.fromImage! };
    assert.throws(() => e2bDockerfile(p, base, 'b'), (err: Error & { details?: { step?: string } }) => re.test(err.message) && err.details?.step === step, JSON.stringify(t));
  }
});

test("a build's policy judges each E2B command as written (sh -c CMD), never the bash-or-sh wrapper around it", () => {
  const t = program({ fromTemplate: 'base', steps: [{ type: 'RUN', args: ['git push origin main'] }, { type: 'RUN', args: ['echo a\nrm -rf /'] }], startCmd: 'serve --port 1' });
  const cmds = dockerfileCommands(e2bDockerfile(t, { kind: 'template', name: 'base' }, 'b').dockerfile).map((c) => c.argv);
  assert.deepEqual(cmds, [['/bin/sh', '-c', 'git push origin main'], ['/bin/sh', '-c', 'echo a\nrm -rf /'], ['/bin/sh', '-c', 'serve --port 1']]);
  assert.deepEqual(dockerfileCommands('FROM a\nSHELL ["/bin/sh", "-c", "eval \\"$0\\""]\nRUN x\n').map((c) => c.argv), [['/bin/sh', '-c', 'eval "$0"', 'x']], 'any other shell is judged as it runs');
});
