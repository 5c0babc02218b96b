import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseDockerfile } from './dockerfile-parser.js';
import { planDockerfile, resolveFrom } from './dockerfile-plan.js';
import { expandWord, expandWords } from './dockerfile-words.js';

const ok = (text: string) => {
  const r = parseDockerfile(text);
  assert.ok(r.ok, r.ok ? '' : r.error);
  return r.value;
};

test('continuations, comments inside them, blank lines and keywords in any case', () => {
  const df = ok('# a comment\n\nfrom img:1\nRUN echo a \\\n  # dropped\n\n  && echo b\nrun   ["a", "b c"]\n');
  assert.deepEqual(
    df.instructions.map((i) => [i.keyword, i.line, i.args, i.json]),
    [
      ['FROM', 3, 'img:1', undefined],
      ['RUN', 4, 'echo a   && echo b', undefined],
      ['RUN', 8, '["a", "b c"]', ['a', 'b c']],
    ],
  );
});

test('the escape directive, flags, and shell form when the JSON is not an array of strings', () => {
  const df = ok('# escape=`\nFROM --platform=linux/amd64 img\nRUN dir c:\\ `\n  && echo x\nCMD [1, 2]\nCOPY --chown=1:2 --link a b\n');
  assert.equal(df.escape, '`');
  assert.deepEqual(df.instructions[0]!.flags, [{ name: 'platform', value: 'linux/amd64' }]);
  assert.equal(df.instructions[1]!.args, 'dir c:\\   && echo x');
  assert.equal(df.instructions[2]!.json, undefined);
  assert.deepEqual(df.instructions[3]!.flags, [
    { name: 'chown', value: '1:2' },
    { name: 'link', value: undefined },
  ]);
});

test('errors name their line', () => {
  const r = parseDockerfile('FROM a\n\n!!! x\n');
  assert.ok(!r.ok && r.line === 3 && /unknown instruction/.test(r.error));
  assert.ok(!parseDockerfile('   \n# only a comment\n').ok);
  assert.ok(!parseDockerfile('FROM a\0').ok);
});

test('variables as Docker substitutes them', () => {
  const v = { A: 'x y', B: '', C: 'c' };
  assert.deepEqual(expandWords('$A "${A}" \'$A\' \\$A ${B:-d} ${B-d} ${C:+plus} ${Z:+no}end $', v), ['x', 'y', 'x y', '$A', '$A', 'd', 'plus', 'end', '$']);
  assert.equal(expandWord('"${A}"-${C}', v), 'x y-c');
  assert.equal(expandWord('${Z:-${C}d}', v), 'cd');
  assert.throws(() => expandWord('${Z:?needed}', v), /needed/);
  assert.throws(() => expandWords('"open', v), /unterminated/);
  assert.throws(() => expandWords('${A', v), /missing/);
});

test('a plan: ARG before FROM, ENV over ARG, WORKDIR relative, CMD and ENTRYPOINT', () => {
  const df = ok(`ARG TAG=1
FROM img:\${TAG}
ARG TAG
ARG WHO=me
ENV A=1 B=\${WHO}-$TAG
ENV C the rest $A
WORKDIR app
WORKDIR sub
USER nobody:nogroup
COPY a b /dst/
RUN echo $A
ENTRYPOINT ["/e"]
`);
  const from = resolveFrom(df, { TAG: '2' });
  assert.ok(from.ok);
  assert.deepEqual(from.value.from, { kind: 'image', ref: 'img:2' });
  const p = planDockerfile(df, { env: { PATH: '/bin' }, cwd: '/w', cmd: ['base-cmd'] }, { TAG: '2' });
  assert.ok(p.ok, p.ok ? '' : p.error);
  assert.deepEqual(p.value.final, { env: { PATH: '/bin', A: '1', B: 'me-2', C: 'the rest 1' }, cwd: '/w/app/sub', user: 'nobody', start: ['/e'] });
  const copy = p.value.steps[9]!;
  assert.ok(copy.kind === 'copy');
  assert.deepEqual([copy.sources, copy.dest, copy.destIsDir], [['a', 'b'], '/dst', true]);
  const run = p.value.steps[10]!;
  assert.ok(run.kind === 'run');
  assert.deepEqual(run.argv, ['/bin/sh', '-c', 'echo $A']);
  assert.deepEqual(run.state.args, { TAG: '2', WHO: 'me' });
  assert.equal(run.state.cwd, '/w/app/sub');
});

test('SHELL: shell-form RUN, CMD and ENTRYPOINT run under it from that line on; exec forms never; its argv is in the key', () => {
  const df = ok('FROM a\nRUN one\nSHELL ["/bin/bash", "-lc"]\nRUN two\nRUN ["x", "y"]\nCMD serve\n');
  const p = planDockerfile(df, { env: {} });
  assert.ok(p.ok, p.ok ? '' : p.error);
  const runs = p.value.steps.filter((x) => x.kind === 'run');
  assert.deepEqual(runs.map((r) => r.argv), [['/bin/sh', '-c', 'one'], ['/bin/bash', '-lc', 'two'], ['x', 'y']]);
  assert.deepEqual(p.value.final.start, ['/bin/bash', '-lc', 'serve']);
  const plain = planDockerfile(ok('FROM a\nRUN two\n'), { env: {} });
  assert.ok(plain.ok);
  assert.notEqual(plain.value.steps.at(-1)!.material, runs[1]!.material, 'same text under another shell is another step');
});

test('what is refused, by line', () => {
  const refused: [string, RegExp][] = [
    ['FROM a\nFROM b\n', /line 2: a second FROM/],
    ['RUN x\n', /line 1: RUN before FROM/],
    ['FROM a\nADD https://example.com/x /x\n', /line 2: ADD from a URL/],
    ['FROM a\nADD x.tar.gz /x\n', /archive/],
    ['FROM a\nCOPY --from=build /a /b\n', /--from/],
    ['FROM a\nCOPY a b c\n', /ending with \//],
    ['FROM a\nSHELL /bin/bash -c\n', /line 2: SHELL takes a JSON array/],
    ['FROM a\nHEALTHCHECK NONE\n', /line 2: HEALTHCHECK is not supported/],
    ['FROM a\nRUN --mount=type=cache,target=/x make\n', /--mount/],
    ['FROM a\nENV 1A=x\n', /invalid ENV name/],
    ['FROM a\nUSER "a b"\n', /invalid USER/],
    ['FROM scratch\n', /scratch/],
    ['FROM template:Bad_Name\n', /invalid template name/],
    ['FROM --platform=linux/arm64 a\n', /linux\/amd64/],
  ];
  for (const [text, re] of refused) {
    const df = ok(text);
    const p = planDockerfile(df, { env: {} });
    assert.ok(!p.ok && re.test(p.error), `${JSON.stringify(text)} → ${p.ok ? 'ok' : p.error}`);
  }
});

test('fuzz: any text parses to a result (never throws), and plans to a result', () => {
  const keyword = fc.constantFrom('FROM', 'RUN', 'COPY', 'ADD', 'ENV', 'ARG', 'WORKDIR', 'USER', 'CMD', 'ENTRYPOINT', 'LABEL', 'EXPOSE', 'from', 'X', '#', '');
  const word = fc.string({ unit: fc.constantFrom('a', ' ', '\\', '"', "'", '$', '{', '}', ':', '-', '+', '?', '=', '[', ']', ',', '/', '*', '\n', '\t', '`', '0') });
  const line = fc.tuple(keyword, word).map(([k, w]) => `${k} ${w}`);
  fc.assert(
    fc.property(fc.array(line, { maxLength: 12 }), fc.dictionary(fc.constantFrom('A', 'B', 'TAG'), fc.string()), (lines, args) => {
      const r = parseDockerfile(lines.join('\n'));
      if (!r.ok) {
        assert.ok(r.line >= 1 && typeof r.error === 'string');
        return;
      }
      const p = planDockerfile(r.value, { env: {} }, args);
      if (!p.ok) assert.ok(p.line >= 1);
      else for (const s of p.value.steps) assert.equal(typeof s.material, 'string');
    }),
    { numRuns: 2000 },
  );
  fc.assert(fc.property(fc.string(), (s) => void parseDockerfile(s)), { numRuns: 2000 });
});

test('expansions are bounded: an ENV that doubles itself stops with an error, not the daemon', () => {
  const df = ok(`FROM a\nENV A=xxxxxxxxxxxxxxxx\n${'ENV A=$A$A\n'.repeat(40)}`);
  const t0 = performance.now();
  const p = planDockerfile(df, { env: {} });
  assert.ok(!p.ok && /longer than|larger than/.test(p.error), p.ok ? 'planned' : p.error);
  assert.ok(performance.now() - t0 < 2000);
});
