import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstExit } from './exit-watch.js';

test('one end announced once, whichever source says it first; every source stops then', () => {
  const fires: Array<() => void> = [];
  const stopped: string[] = [];
  let ends = 0;
  const source = (name: string) => (fire: () => void) => (fires.push(fire), () => void stopped.push(name));
  const w = firstExit(() => ends++, source('host'), source('own'));
  assert.equal(w.everyExit, true);
  fires[1]!();
  fires[0]!();
  assert.equal(ends, 1);
  assert.deepEqual(stopped, ['host', 'own']);
});

test('no host watch: only the runtime\'s own ends are announced, and the watch says so', () => {
  let ends = 0;
  let fire = () => {};
  const w = firstExit(() => ends++, () => undefined, (f) => ((fire = f), () => {}));
  assert.equal(w.everyExit, false);
  fire();
  assert.equal(ends, 1);
});

test('a source that fires at once (the end came before the watch) still stops the others', () => {
  const stopped: string[] = [];
  let ends = 0;
  const w = firstExit(
    () => ends++,
    (fire) => (fire(), () => void stopped.push('host')),
    () => () => void stopped.push('own'),
  );
  assert.equal(ends, 1);
  assert.ok(stopped.includes('own'), 'the source added after the end is stopped too');
  w.stop();
});
