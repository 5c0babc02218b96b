import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UnreadEvents } from './unread-events.js';

const ev = (i: number, pad = 0) => ({ name: `f${i}${'x'.repeat(pad)}`, type: 'EVENT_TYPE_CREATE' });

test('a watcher holds at most its count and bytes; later events are dropped, earlier ones kept in order', () => {
  const u = new UnreadEvents({ perWatcherEvents: 5, perWatcherBytes: 10_000, totalBytes: 1_000_000 });
  const q = u.queue();
  for (let i = 0; i < 20; i++) q.push(ev(i));
  assert.equal(q.length, 5);
  assert.equal(u.dropped, 15);
  assert.deepEqual(q.take(), [0, 1, 2, 3, 4].map((i) => ev(i)));
  assert.equal(u.totalBytes, 0);
  assert.ok(q.push(ev(99)), 'room again after a poll');
  const b = new UnreadEvents({ perWatcherEvents: 1000, perWatcherBytes: 500, totalBytes: 1_000_000 }).queue();
  for (let i = 0; i < 100; i++) b.push(ev(i, 40));
  assert.ok(b.bytes <= 500 && b.length < 100);
});

test('all watchers together hold at most the node total; a removed one gives its bytes back', () => {
  const u = new UnreadEvents({ perWatcherEvents: 1000, perWatcherBytes: 100_000, totalBytes: 5_000 });
  const qs = Array.from({ length: 10 }, () => u.queue());
  for (let i = 0; i < 2000; i++) qs[i % 10]!.push(ev(i, 100));
  assert.ok(u.totalBytes <= 5_000, `${u.totalBytes}`);
  const held = qs[0]!.bytes;
  qs[0]!.close();
  assert.equal(u.totalBytes <= 5_000 - held, true);
  assert.equal(qs[0]!.push(ev(1)), false, 'a closed queue takes nothing');
});
