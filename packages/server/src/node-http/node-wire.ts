import type { BuildStep, ErrorBody, SpawnRequest, TemplateInfo, WatchEvent } from '@forkd/protocol';
import type { ProcessSelector, SpawnOptions } from '../node-contract/node-types.js';

/**
 * What the node's HTTP server (node-http-server.ts, where the wire format is
 * described) and its client (node-http-client.ts) share: the path prefix,
 * the port upgrade's names and the lines of the NDJSON streams.
 */
export const NODE_PREFIX = '/node/v1';
/** The `Upgrade` token of a port connection. */
export const PORT_UPGRADE = 'forkd-port';
/** Names a port connection in the 101 answer; its result is asked for under it once the socket closes. */
export const PORT_CONNECTION_HEADER = 'x-forkd-port-connection';

/** A spawn/attach stream's lines; `started` names the stream's handle on the node (`stream`). */
export type ProcessLine =
  | { type: 'started'; pid: number; tag?: string; pty: boolean; stream: string; token?: number; offset?: number }
  | { type: 'stdout' | 'stderr'; data: string }
  | { type: 'position'; offset: number }
  | { type: 'dropped'; bytes: number }
  | { type: 'rewound' }
  | { type: 'exit'; exitCode: number; signal: number; oomKilled: boolean }
  /** The node's stream let go of the process without an exit (its `exit` resolved null). */
  | { type: 'detached' }
  | { type: 'error'; error: ErrorBody['error'] };

export type WatchLine = { type: 'ready' } | { type: 'event'; event: WatchEvent } | { type: 'end' } | { type: 'error'; error: ErrorBody['error'] };

/** `claim`: the build sandbox's id, for the client to claim (see NodeHttpClient.buildTemplate). */
export type BuildLine = { type: 'claim'; id: string } | { type: 'progress'; line: string; step?: BuildStep } | { type: 'done'; template: TemplateInfo } | { type: 'error'; error: ErrorBody['error'] };

/** A process selector in a path: the public API's form (a pid, or `tag:<tag>`). */
export function selectorSegment(sel: ProcessSelector): string {
  return 'pid' in sel ? String(sel.pid) : `tag:${sel.tag}`;
}

/** SpawnOptions travel as the public API's SpawnRequest (its `cmd` form), so the protocol's schema validates them. */
export function toSpawnRequest(o: SpawnOptions): SpawnRequest {
  return {
    cmd: o.argv,
    ...(o.env !== undefined ? { env: o.env } : {}),
    ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
    ...(o.user !== undefined ? { user: o.user } : {}),
    ...(o.tag !== undefined ? { tag: o.tag } : {}),
    ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
    ...(o.pty ? { pty: true, cols: o.pty.cols, rows: o.pty.rows } : {}),
  };
}

