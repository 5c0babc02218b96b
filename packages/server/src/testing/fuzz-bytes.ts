import fc from 'fast-check';

/**
 * Byte inputs for a parser's property tests, shaped around real messages
 * (`valid`: a list, or an arbitrary of them): prefixes (truncations), random byte flips, length fields
 * overwritten with edge values, a slice cut out or
 * spliced in, oversized ones (garbage or repeats after a valid message), and
 * plain random bytes. What a hostile sender can do with one message.
 */
export function hostileBytes(valid: readonly Buffer[] | fc.Arbitrary<Buffer>, maxRandom = 2048): fc.Arbitrary<Buffer> {
  const base = valid instanceof fc.Arbitrary ? valid : fc.constantFrom(...valid);
  const prefix = base.chain((b) => fc.nat(b.length).map((n) => b.subarray(0, n)));
  const flips = base.chain((b) =>
    fc.array(fc.tuple(fc.nat(Math.max(0, b.length - 1)), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }).map((ps) => {
      const m = Buffer.from(b);
      for (const [i, v] of ps) if (i < m.length) m[i] = v;
      return m;
    }),
  );
  // Length fields sit near a message's start and lie with edge values: a u16 written there, the rest cut short.
  const edge = fc.oneof(fc.integer({ min: 0, max: 8 }), fc.constantFrom(0x7f, 0x80, 0xff, 0x100, 0x3fff, 0x4000, 0x7fff, 0xffff), fc.integer({ min: 0, max: 0xffff }));
  const lengths = base.chain((b) =>
    fc.tuple(fc.array(fc.tuple(fc.oneof(fc.nat(24), fc.nat(b.length)), edge), { minLength: 1, maxLength: 3 }), fc.oneof(fc.nat(24), fc.nat(b.length + 8))).map(([ws, cut]) => {
      const m = Buffer.from(b);
      for (const [at, v] of ws) if (at + 2 <= m.length) m.writeUInt16BE(v, at);
      return m.subarray(0, Math.min(m.length, cut));
    }),
  );
  const flipsThenCut = fc.tuple(flips, fc.oneof(fc.nat(24), fc.nat())).map(([b, n]) => b.subarray(0, b.length ? n % (b.length + 1) : 0));
  const splice = base.chain((b) =>
    fc.tuple(fc.nat(b.length), fc.nat(16), fc.uint8Array({ maxLength: 16 })).map(([at, cut, ins]) => Buffer.concat([b.subarray(0, at), Buffer.from(ins), b.subarray(Math.min(b.length, at + cut))])),
  );
  const oversized = base.chain((b) =>
    fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 4096 }).map((tail) => Buffer.concat([b, Buffer.from(tail)])),
      fc.integer({ min: 2, max: 40 }).map((n) => Buffer.concat(Array.from({ length: n }, () => b))),
    ),
  );
  const random = fc.uint8Array({ maxLength: maxRandom }).map((a) => Buffer.from(a));
  return fc.oneof(prefix, flips, lengths, flipsThenCut, splice, oversized, random);
}

/** Every prefix of `b`, shortest first (the truncations a slow or hostile sender gives). */
export function prefixes(b: Buffer): Buffer[] {
  return Array.from({ length: b.length + 1 }, (_, n) => b.subarray(0, n));
}
