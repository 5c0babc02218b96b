import { test } from 'node:test';
import assert from 'node:assert/strict';
import { incompatibilities, type InstalledVersions } from './snapshot-compat.js';
import type { SnapshotStamp } from './snapshot-stamp.js';

const now: InstalledVersions = { format: 1, forkd: '0.2.0', guestProtocol: { min: 1, max: 3 }, criu: '4.2', runc: '1.3.2' };
const made = (s: Partial<SnapshotStamp> = {}): SnapshotStamp => ({ format: 1, forkd: '0.1.0', guestProtocol: 3, criu: '4.2', runc: '1.3.0', ...s });

test('what the installed versions restore: their own, older CRIU and runc images, older agents down to the host minimum, patch releases either way', () => {
  for (const s of [made(), made({ criu: '4.1' }), made({ criu: '3.17' }), made({ criu: '4.2.9' }), made({ runc: '1.2.5' }), made({ runc: '1.4.0-rc.1' }), made({ guestProtocol: 1 }), made({ guestProtocol: 4 }), made({ format: 0 })]) {
    assert.deepEqual(incompatibilities(s, now), [], JSON.stringify(s));
  }
});

test('what they refuse, each with its reason: a newer checkpoint format, an agent below the host minimum, newer CRIU images, ancient CRIU images, a newer runc major', () => {
  const one = (s: SnapshotStamp, re: RegExp) => {
    const why = incompatibilities(s, now);
    assert.equal(why.length, 1, JSON.stringify(why));
    assert.match(why[0]!, re);
  };
  one(made({ format: 2, forkd: '0.9.0' }), /forkd 0\.9\.0 in checkpoint format 2; forkd 0\.2\.0 reads up to format 1/);
  one(made({ guestProtocol: 0 }), /protocol 0; .* down to 1 only/);
  one(made({ criu: '4.3' }), /CRIU 4\.3; the installed CRIU 4\.2 is older/);
  one(made({ criu: '5.0' }), /CRIU 5\.0/);
  one(made({ criu: '2.9' }), /older than 3\.0/);
  one(made({ runc: '2.0.0' }), /runc 2\.0\.0; the installed runc 1\.3\.2 is of an older major/);
  assert.equal(incompatibilities(made({ format: 3, criu: '9.0', runc: '3.0.0', guestProtocol: 0 }), now).length, 4);
});

test('an installed version that could not be read holds nothing against a snapshot', () => {
  assert.deepEqual(incompatibilities(made({ criu: '9.9', runc: '9.0.0' }), { ...now, criu: 'unknown', runc: 'unknown' }), []);
});
