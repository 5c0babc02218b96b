import { Hono } from 'hono';
import { ForkdError, toForkdError } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { Logger } from '../shared/logger.js';
import { serveHttp, type RunningServer, type TlsFiles } from '../shared/http-server.js';
import { mountNodeRoutes } from './node-routes.js';
import { mountStreamRoutes } from './node-stream-routes.js';
import { PortResults, portUpgrade } from './node-port-upgrade.js';
import { presentsToken } from './node-token.js';
import { NODE_PREFIX } from './node-wire.js';
import { NODE_REQUEST_ID_HEADER, requestIdFrom, withContext } from '../shared/request-context.js';

const requestIdOf = (h: string | undefined) => {
  const requestId = requestIdFrom(h);
  return requestId ? { requestId } : {};
};

/*
 * The node contract (node-contract/node-service.ts) over HTTP: what
 * `forkd serve --role node` answers and NodeHttpClient speaks.
 *
 * Everything is under /node/v1 and needs `authorization: Bearer <node token>`
 * (<stateDir>/node.token, see node-token.ts); anything else is 401
 * UNAUTHENTICATED. The caller is a control plane, trusted: errors come whole.
 *
 * Errors: the ForkdError's HTTP status and the protocol's ErrorBody
 * `{"error":{"code","message","details"?}}`; the client rethrows a ForkdError
 * with the same code, message and details.
 *
 * Unary calls (JSON bodies validated by the protocol's zod schemas):
 *   POST   /sandboxes                        CreateSandboxRequest → 201 SandboxInfo
 *   GET    /sandboxes                        → {sandboxes}
 *   GET    /sandboxes/:id                    → SandboxInfo        DELETE → 204
 *   POST   /sandboxes/:id/timeout            SetTimeoutRequest → SandboxInfo
 *   PUT    /sandboxes/:id/network            SetNetworkRequest → SandboxInfo
 *   GET    /sandboxes/:id/metrics            → SandboxMetrics
 *   GET    /sandboxes/:id/processes          → {processes}
 *   POST   /sandboxes/:id/processes/:sel/signal  {signal} → 204    (sel: pid or tag:<tag>)
 *   POST   /sandboxes/:id/processes/:sel/stdin   StdinRequest (base64) → 204
 *   GET    /sandboxes/:id/files?path=        → the bytes, application/octet-stream with content-length
 *   PUT    /sandboxes/:id/files?path=&mode=&append=&user=&metadata=&metadataScope=   the bytes, streamed → 201 {size}
 *          (metadata: a JSON object, as in the public API)
 *   DELETE /sandboxes/:id/files?path=&recursive=            → 204
 *   GET    /sandboxes/:id/files/list?path=&depth= → {entries}; /files/stat?path= → FileEntry
 *   POST   /sandboxes/:id/files/mkdir        MkdirRequest → 204; /files/move MoveRequest → 204
 *   POST   /sandboxes/:id/snapshots          CreateSnapshotRequest → 201 SnapshotInfo
 *   GET    /sandboxes/:id/snapshots          → {snapshots}
 *   GET    /snapshots/:snap → SnapshotInfo;  DELETE → 204;  POST /snapshots/:snap/pin PinRequest → SnapshotInfo
 *   POST   /sandboxes/:id/pause PauseRequest | /resume ResumeRequest (bodies optional) → SandboxInfo;  /rewind RewindRequest → SandboxInfo
 *   POST   /fork/:source                     ForkRequest → 201 {sandboxes}  (a sandbox id or a snapshot id)
 *   GET    /sandboxes/:id/tree → ForkTree;   GET /templates → {templates};  DELETE /templates/:name → 204
 *   GET    /stats                            → NodeStats
 *
 * Streams (NDJSON, one JSON object a line; an error before the stream
 * starts is an ordinary error answer, one after it an `error` line):
 *   POST /sandboxes/:id/processes             SpawnRequest (the `cmd` form)
 *   POST /sandboxes/:id/processes/:sel/attach
 *     → started {pid, tag?, pty, stream}, then stdout|stderr {data: base64},
 *       dropped {bytes}, rewound, and last exit {exitCode, signal, oomKilled},
 *       detached (the node's stream let go) or error {error}.
 *     The ProcessHandle: POST /sandboxes/:id/processes/:pid/streams/:stream/
 *     write (the bytes) | eof | signal {signal} | resize {cols, rows} → 204,
 *     one at a time per handle (the client queues them in order). Detach:
 *     the client closes the response; the node detaches, the process runs on.
 *   POST /sandboxes/:id/watch {path, recursive} → ready, event {event}…, end | error.
 *     Close: the client closes the response.
 *   POST /templates BuildTemplateRequest → claim {id} (the build sandbox), progress {line}…, done {template} | error.
 *   Every line waits for the reader: back-pressure reaches the guest.
 *
 * Ports: GET /sandboxes/:id/ports/:port with `Connection: Upgrade`,
 * `Upgrade: forkd-port` → 101 with `x-forkd-port-connection: <cid>`, then the
 * connection's bytes both ways, unframed. What is known at once (no such
 * sandbox, not running, bad token) is a non-101 error answer. Whether
 * anything listened is known only when the relay ends: GET
 * /port-connections/:cid → the PortConnection's `done` ({refused, error?}),
 * once it settled (kept a minute).
 */

export interface NodeHttpDeps {
  node: NodeService;
  token: string;
  logger: Logger;
}

export type { RunningServer as RunningNodeServer } from '../shared/http-server.js';

/** The node contract's routes, the token check and the error answers. */
export function createNodeApp({ node, token, logger }: NodeHttpDeps, results: PortResults): Hono {
  const app = new Hono();
  app.onError((err, c) => {
    const fe = toForkdError(err);
    if (fe.status >= 500) logger.error('node request failed', { ...requestIdOf(c.req.header(NODE_REQUEST_ID_HEADER)), method: c.req.method, path: c.req.path, code: fe.code, error: fe.message, ...(fe.details ? { details: fe.details } : {}) });
    return c.json(fe.toJSON(), fe.status as 400);
  });
  app.notFound((c) => c.json(new ForkdError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`).toJSON(), 404));
  app.use(`${NODE_PREFIX}/*`, async (c, next) => {
    if (!presentsToken(c.req.header('authorization'), token)) throw new ForkdError('UNAUTHENTICATED', 'this node answers only its control plane (node token)');
    // The node's lines logged for this call carry the control plane's request id.
    await withContext({ requestId: requestIdFrom(c.req.header(NODE_REQUEST_ID_HEADER)) }, next);
  });
  const api = new Hono();
  mountNodeRoutes(api, node);
  mountStreamRoutes(api, node, logger);
  api.get('/port-connections/:cid', async (c) => c.json(await results.result(c.req.param('cid'))));
  app.route(NODE_PREFIX, api);
  return app;
}

/** Serves the node contract over HTTP/1.1 or HTTPS (port connections as upgrades). */
export async function listenNode(deps: NodeHttpDeps, host: string, port: number, tls?: TlsFiles): Promise<RunningServer> {
  const results = new PortResults();
  const app = createNodeApp(deps, results);
  return serveHttp({ fetch: app.fetch, host, port, upgrade: portUpgrade(deps.node, deps.token, results, deps.logger), logger: deps.logger, role: 'node', tls });
}
