/**
 * Base64 for wire payloads (process output, stdin). Node's Buffer is much
 * faster than atob/btoa, so it is used when present; browsers fall back.
 */
const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;

export function toBase64(bytes: Uint8Array): string {
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

export function fromBase64(text: string): Uint8Array {
  if (NodeBuffer) {
    const b = NodeBuffer.from(text, 'base64');
    // A plain view, so callers see the same type in every runtime.
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
