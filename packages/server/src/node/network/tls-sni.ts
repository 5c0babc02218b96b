/**
 * The server name of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3), read
 * from the first bytes of a connection without consuming them (the proxy
 * forwards the same bytes). `need`: more bytes are needed; `none`: a
 * complete hello without a name (or not TLS at all).
 */
export type SniResult = { kind: 'name'; name: string } | { kind: 'need' } | { kind: 'none' };

export function readSni(b: Buffer): SniResult {
  if (b.length < 5) return { kind: 'need' };
  if (b[0] !== 0x16) return { kind: 'none' };
  const recLen = b.readUInt16BE(3);
  // A hello split over several records is rare (post-quantum key shares can do it): the first record's
  // part usually holds the name anyway; parse what the first record has.
  if (b.length < 5 + Math.min(recLen, 4)) return { kind: 'need' };
  if (b[5] !== 0x01) return { kind: 'none' };
  const hsLen = b.readUIntBE(6, 3);
  const end = 9 + hsLen;
  if (b.length < Math.min(end, 5 + recLen)) return { kind: 'need' };
  const body = b.subarray(0, Math.min(end, b.length));
  try {
    let off = 9 + 2 + 32;
    off += 1 + body[off]!;
    off += 2 + body.readUInt16BE(off);
    off += 1 + body[off]!;
    if (off + 2 > body.length) return { kind: 'none' };
    const extEnd = Math.min(body.length, off + 2 + body.readUInt16BE(off));
    off += 2;
    while (off + 4 <= extEnd) {
      const type = body.readUInt16BE(off);
      const len = body.readUInt16BE(off + 2);
      off += 4;
      if (type === 0) {
        // server_name_list: one host_name (type 0).
        if (body[off + 2] !== 0) return { kind: 'none' };
        const nlen = body.readUInt16BE(off + 3);
        const name = body.toString('latin1', off + 5, off + 5 + nlen).toLowerCase();
        return /^[a-z0-9_.-]{1,253}$/.test(name) ? { kind: 'name', name } : { kind: 'none' };
      }
      off += len;
    }
    return end > body.length ? { kind: 'need' } : { kind: 'none' };
  } catch {
    return end > b.length ? { kind: 'need' } : { kind: 'none' };
  }
}
