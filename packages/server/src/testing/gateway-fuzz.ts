import { randomBytes, randomInt } from 'node:crypto';
import { connect } from 'node:net';

/** Clients for the live fuzz of the daemon's gateways (e2e/adversarial-gateway-bytes): bytes no well-behaved client sends. */

export interface Target {
  host: string;
  port: number;
}

/** A valid message cut short, with bytes flipped, grown by random bytes, or replaced by random bytes. */
export function mutate(b: Buffer): Buffer {
  const pick = randomInt(4);
  if (pick === 0) return b.subarray(0, randomInt(b.length + 1));
  if (pick === 1) {
    const c = Buffer.from(b);
    for (let i = randomInt(1, 8); i > 0 && c.length; i--) {
      const at = randomInt(c.length);
      c[at] = c[at]! ^ randomInt(1, 256);
    }
    return c;
  }
  if (pick === 2) return Buffer.concat([b, randomBytes(randomInt(1, 512))]);
  return randomBytes(randomInt(0, 512));
}

/** Writes `bytes` on a fresh connection, reads what comes for up to `waitMs`, then cuts it. */
export function rawRequest(t: Target, bytes: Buffer, waitMs = 500): Promise<Buffer> {
  return new Promise((resolve) => {
    const s = connect(t.port, t.host);
    const got: Buffer[] = [];
    const done = () => {
      s.destroy();
      resolve(Buffer.concat(got));
    };
    s.on('error', done);
    s.on('data', (d: Buffer) => got.push(d));
    s.on('close', done);
    s.write(bytes);
    setTimeout(done, waitMs);
  });
}

/** A WebSocket handshake done right, then frames that are not (unmasked, bad opcodes, lengths past the limit, random). */
export function wsGarbage(t: Target, path: string): Promise<Buffer> {
  const key = randomBytes(16).toString('base64');
  const head = `GET ${path} HTTP/1.1\r\nhost: ${t.host}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: ${key}\r\n\r\n`;
  const frames = [
    Buffer.from([0x81, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f]), // unmasked text
    Buffer.from([0x83, 0x80, 1, 2, 3, 4]), // reserved opcode
    Buffer.from([0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]), // 2^63 bytes
    Buffer.from([0xf1, 0x80, 1, 2, 3, 4]), // RSV bits
    randomBytes(randomInt(1, 256)),
  ];
  return rawRequest(t, Buffer.concat([Buffer.from(head), frames[randomInt(frames.length)]!]), 300);
}
