import type { SandboxInfo } from '@forkd/protocol';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Test helper: a real HTTP server on 127.0.0.1:0 with a scripted handler. */
export interface FakeRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface FakeServer {
  url: string;
  requests: FakeRequest[];
  close(): Promise<void>;
}

export async function startFakeServer(handler: (req: FakeRequest, res: ServerResponse) => void | Promise<void>): Promise<FakeServer> {
  const requests: FakeRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r = { method: req.method ?? 'GET', url: new URL(req.url ?? '/', 'http://x'), headers: req.headers, body: Buffer.concat(chunks) };
    requests.push(r);
    try {
      await handler(r, res);
    } catch (err) {
      res.statusCode = 599;
      res.end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Writes `text` in pieces of `size` bytes with a pause between, so the client sees lines split across chunks. */
export async function writeInPieces(res: ServerResponse, text: string, size: number): Promise<void> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) {
    res.write(bytes.subarray(i, i + size));
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** A SandboxInfo for tests: running `base` sandbox with default limits. */
export function sandboxInfo(id: string, extra: Partial<SandboxInfo> = {}): SandboxInfo {
  return {
    id,
    template: 'base',
    state: 'running',
    limits: { memoryMb: 512, cpus: 1, pids: 1024 },
    env: {},
    metadata: {},
    createdAt: '2025-01-01T00:00:00.000Z',
    hostname: 'sandbox',
    ...extra,
  };
}

export const ndjson = (events: object[]): string => events.map((e) => JSON.stringify(e) + '\n').join('');

/** A handler answering with NDJSON events written `pieceSize` bytes at a time, so lines arrive split across chunks. */
export function streamEvents(events: object[], pieceSize: number) {
  return async (_req: FakeRequest, res: ServerResponse): Promise<void> => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    await writeInPieces(res, ndjson(events), pieceSize);
    res.end();
  };
}
