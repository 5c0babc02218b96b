import { createServer } from 'node:http';

/** A loopback HTTP server that keeps every JSON body posted to it (an approval webhook's receiver in tests). */
export interface JsonSink {
  url: string;
  received: unknown[];
  close(): void;
}

export async function startJsonSink(path = '/hook'): Promise<JsonSink> {
  const received: unknown[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString()));
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}${path}`, received, close: () => server.close() };
}
