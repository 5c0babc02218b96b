import type { NodeService } from '../../node-contract/index.js';
import type { OpenStreams } from './e2b-context.js';
import type { RpcStream } from './rpc-stream.js';

/** One envd request, routed and authorised: the sandbox, the owner's view of the node, the request user. */
export interface EnvdCall {
  id: string;
  view: NodeService;
  user: string;
  requestId: string;
  streams: OpenStreams;
  /** What the audit record names as the target (a command, a path). */
  target?: string | undefined;
}

export type UnaryMethod = (call: EnvdCall, msg: unknown) => Promise<unknown>;

/** A server-streaming method; `deadlineMs` is the client's Connect-Timeout-Ms. */
export type StreamMethod = (call: EnvdCall, msg: unknown, stream: RpcStream, deadlineMs: number | undefined) => Promise<void>;

export interface RpcService {
  unary: Record<string, UnaryMethod>;
  streams: Record<string, { method: StreamMethod; keepalive: unknown }>;
}
