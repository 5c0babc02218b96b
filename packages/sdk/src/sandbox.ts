import { ForkdError } from '@forkd/protocol/errors';
import type { ForkRequest, PolicyAnswer, PolicyDocument, ProcessInfo, SandboxInfo, SetNetworkRequest, SnapshotInfo, CreateGrantRequest, GrantInfo } from '@forkd/protocol';
import { toBase64 } from './base64.js';
import { ByteCollector, toBytes } from './bytes.js';
import type { HttpTransport } from './http-transport.js';
import type { WireResponse } from './fetch-like.js';
import { followProcess } from './follow-process.js';
import { outputSinks } from './output-sink.js';
import type { ProcessEventHandlers } from './process-events.js';
import { SandboxFiles } from './sandbox-files.js';
import { selectorObject, selectorSegment } from './selector.js';
import { spawnRequest } from './spawn-request.js';
import { StreamSession, type PtySession, type StreamOpen } from './stream-session.js';
import type {
  AttachHandlers,
  BackgroundOptions,
  Command,
  ExecOptions,
  ExecResult,
  ForkOptions,
  ForkTree,
  Metrics,
  OutputEncoding,
  PauseOptions,
  ProcessExit,
  ProcessSelector,
  PtyOptions,
  ResumeOptions,
  SignalSpec,
  SnapshotOptions,
  StartedProcess,
  StreamOptions,
} from './types.js';
import { openWebSocket, resolveWebSocket, type WebSocketConstructor } from './websocket.js';

/** A handle on one sandbox. `info` is as last fetched (kept current by pause, resume and rewind); `refresh()` reloads it. */
export class Sandbox {
  readonly id: string;
  readonly files: SandboxFiles;
  #info: SandboxInfo;
  readonly #http: HttpTransport;
  readonly #WebSocket: WebSocketConstructor | undefined;
  readonly #base: string;

  constructor(http: HttpTransport, info: SandboxInfo, WebSocket?: WebSocketConstructor) {
    this.id = info.id;
    this.#info = info;
    this.#http = http;
    this.#WebSocket = WebSocket;
    this.#base = `/v1/sandboxes/${encodeURIComponent(info.id)}`;
    this.files = new SandboxFiles(http, info.id);
  }

  get info(): SandboxInfo {
    return this.#info;
  }

  async refresh(): Promise<SandboxInfo> {
    this.#info = this.#keepToken(await this.#http.json<SandboxInfo>('GET', this.#base));
    return this.#info;
  }

  /** The proxy token is in the create or fork answer only (the server keeps its hash): later answers must not drop it. */
  #keepToken(fresh: SandboxInfo): SandboxInfo {
    return fresh.proxyToken || !this.#info.proxyToken ? fresh : { ...fresh, proxyToken: this.#info.proxyToken };
  }

  delete(): Promise<void> {
    return this.#http.send('DELETE', this.#base);
  }

  /** `await using sb = await client.sandboxes.create()` deletes it at scope end; already gone is fine. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.delete().catch((err: unknown) => {
      if (!(err instanceof ForkdError && err.code === 'NOT_FOUND')) throw err;
    });
  }

  metrics(): Promise<Metrics> {
    return this.#http.json('GET', `${this.#base}/metrics`);
  }

  /** Captures memory and files, freezing the processes only for the dump; the sandbox keeps running. */
  snapshot(opts: SnapshotOptions = {}): Promise<SnapshotInfo> {
    return this.#http.json('POST', `${this.#base}/snapshots`, { json: opts.name !== undefined ? { name: opts.name } : {} });
  }

  /** This sandbox's snapshots, oldest first. */
  async timeline(): Promise<SnapshotInfo[]> {
    const r = await this.#http.json<{ snapshots: SnapshotInfo[] }>('GET', `${this.#base}/snapshots`);
    return r.snapshots;
  }

  /**
   * Snapshots the sandbox and stops it, releasing its memory. Exec and file
   * calls resume it transparently; `resume()` does so explicitly. With
   * `{ memory: false }` only its files are kept: the resume starts it cold.
   */
  pause(opts: PauseOptions = {}): Promise<SandboxInfo> {
    return this.#update('POST', `${this.#base}/pause`, opts.memory === false ? { memory: false } : undefined);
  }

  /** `{ memory: false }`: start it cold from its files even after a pause that kept memory. */
  resume(opts: ResumeOptions = {}): Promise<SandboxInfo> {
    return this.#update('POST', `${this.#base}/resume`, opts.memory === false ? { memory: false } : undefined);
  }

  /**
   * URL of a server listening on `port` inside the sandbox, through forkd's
   * port proxy, carrying the sandbox's own token when this handle came from
   * create or fork (share it, not your API key; the server shows it only then).
   * A paused sandbox is resumed by the first request.
   */
  portUrl(port: number, path = '/'): string {
    const u = new URL(`${this.#http.baseUrl}/sandboxes/${encodeURIComponent(this.id)}/ports/${port}${path.startsWith('/') ? path : `/${path}`}`);
    if (this.#info.proxyToken) u.searchParams.set('forkd_token', this.#info.proxyToken);
    return u.toString();
  }

  /** Extends (or shortens) the lifetime: the sandbox times out `seconds` from now (0: never). */
  setTimeout(seconds: number): Promise<SandboxInfo> {
    return this.#update('POST', `${this.#base}/timeout`, { timeoutSeconds: seconds });
  }

  /**
   * Replaces the network mode (`none`: loopback only; `egress`: outbound
   * through NAT) and the egress rules (IPv4 addresses and CIDRs, or domain
   * names: `example.com`, `*.example.com` for any name under it; allow wins
   * over deny; private, link-local and host addresses are denied unless
   * allowed). A running sandbox's next connection follows them.
   */
  setNetwork(rules: SetNetworkRequest): Promise<SandboxInfo> {
    return this.#update('PUT', `${this.#base}/network`, rules);
  }

  /**
   * Lets this sandbox's requests to `hosts` carry a secret as a header (the
   * egress proxy adds it; the value never enters the sandbox). Until
   * removed, or for `ttlSeconds`. Not inherited by forks.
   */
  createGrant(req: CreateGrantRequest): Promise<GrantInfo> {
    return this.#http.json('POST', `${this.#base}/grants`, { json: req });
  }

  /** Live grants (per-call ones of running exec calls included). */
  async listGrants(): Promise<GrantInfo[]> {
    return (await this.#http.json<{ grants: GrantInfo[] }>('GET', `${this.#base}/grants`)).grants;
  }

  /** Revokes a grant: the next request goes without the header. */
  removeGrant(grant: string | Pick<GrantInfo, 'id'>): Promise<void> {
    return this.#http.send('DELETE', `${this.#base}/grants/${encodeURIComponent(typeof grant === 'string' ? grant : grant.id)}`);
  }

  /**
   * Replaces this sandbox's per-call policy (`{}` removes it): command
   * patterns, hidden and read-only paths, limits, approvals. The tenant's and
   * the template's policies apply as well; this one cannot lift theirs.
   */
  async setPolicy(policy: PolicyDocument): Promise<PolicyDocument> {
    return (await this.#http.json<PolicyAnswer>('PUT', `${this.#base}/policy`, { json: policy })).policy;
  }

  /** This sandbox's own policy (`{}` when none). */
  async getPolicy(): Promise<PolicyDocument> {
    return (await this.#http.json<PolicyAnswer>('GET', `${this.#base}/policy`)).policy;
  }

  /**
   * Puts the sandbox back to one of its own snapshots (memory and files). The
   * state it leaves is snapshotted first (reason `rewind`), so nothing is lost.
   */
  rewind(snapshot: string | Pick<SnapshotInfo, 'id'>): Promise<SandboxInfo> {
    return this.#update('POST', `${this.#base}/rewind`, { snapshot: typeof snapshot === 'string' ? snapshot : snapshot.id });
  }

  /** Copies of this sandbox as it is now (an implicit snapshot); it keeps running. */
  async fork(opts: ForkOptions = {}): Promise<Sandbox[]> {
    const r = await this.#http.json<{ sandboxes: SandboxInfo[] }>('POST', `${this.#base}/fork`, { json: forkRequest(opts) });
    return r.sandboxes.map((info) => new Sandbox(this.#http, info, this.#WebSocket));
  }

  /** This sandbox and the forks made from its snapshots, recursively. */
  tree(): Promise<ForkTree> {
    return this.#http.json('GET', `${this.#base}/tree`);
  }

  async #update(method: string, path: string, json?: unknown): Promise<SandboxInfo> {
    this.#info = this.#keepToken(await this.#http.json<SandboxInfo>(method, path, json !== undefined ? { json } : {}));
    return this.#info;
  }

  /**
   * Runs a command to completion. A string runs through `bash -lc`; an array
   * is argv. Output streams to the callbacks as it comes and is also collected
   * into the result unless `capture: false`.
   */
  async exec<E extends OutputEncoding = 'bytes'>(cmd: Command, opts: ExecOptions<E> = {}): Promise<ExecResult> {
    const req = {
      ...spawnRequest(cmd, opts),
      ...(opts.stdin !== undefined ? { stdinData: toBase64(toBytes(opts.stdin)) } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.grants?.length ? { grants: opts.grants } : {}),
    };
    const res = await this.#http.request('POST', `${this.#base}/exec`, { json: req, streaming: true, signal: opts.abortSignal });
    const capture = opts.capture !== false;
    const stdout = new ByteCollector();
    const stderr = new ByteCollector();
    const sinks = outputSinks(opts);
    let started: StartedProcess | undefined;
    const exit = await this.#follow(res, opts.abortSignal, {
      onStarted: (p) => {
        started = p;
        opts.onStarted?.(p);
      },
      onStdout: (c) => {
        if (capture) stdout.push(c);
        sinks.stdout?.(c);
      },
      onStderr: (c) => {
        if (capture) stderr.push(c);
        sinks.stderr?.(c);
      },
      onDropped: opts.onDropped,
      onRewound: opts.onRewound,
      onWaiting: opts.onWaiting,
      onLimit: opts.onLimit,
    });
    if (!exit) {
      throw started
        ? new ForkdError('UNAVAILABLE', `the exec stream ended before process ${started.pid} exited; it was detached and may still be running`, { pid: started.pid })
        : new ForkdError('UNAVAILABLE', 'the exec stream ended before the process started');
    }
    return { pid: started?.pid ?? 0, ...exit, stdout: capture ? stdout.text() : '', stderr: capture ? stderr.text() : '' };
  }

  /** Starts a process and returns at once; it keeps running (see `attach`, `processes`). */
  spawnBackground(cmd: Command, opts: BackgroundOptions = {}): Promise<{ pid: number; tag?: string }> {
    const req = { ...spawnRequest(cmd, opts, { stdin: opts.openStdin || undefined }), background: true };
    return this.#http.json('POST', `${this.#base}/exec`, { json: req });
  }

  async processes(): Promise<ProcessInfo[]> {
    const r = await this.#http.json<{ processes: ProcessInfo[] }>('GET', `${this.#base}/processes`);
    return r.processes;
  }

  /**
   * Follows a process's output (buffered output first) until it exits.
   * Resolves null when the stream ended first (detached; it keeps running).
   */
  async attach<E extends OutputEncoding = 'bytes'>(sel: ProcessSelector, handlers: AttachHandlers<E> = {}): Promise<ProcessExit | null> {
    const res = await this.#http.request('GET', `${this.#base}/processes/${selectorSegment(sel)}/output`, { streaming: true, signal: handlers.abortSignal });
    const sinks = outputSinks(handlers);
    return this.#follow(res, handlers.abortSignal, {
      onStarted: handlers.onStarted,
      onStdout: sinks.stdout,
      onStderr: sinks.stderr,
      onDropped: handlers.onDropped,
      onRewound: handlers.onRewound,
      onLimit: handlers.onLimit,
    });
  }

  /** Follows a process stream to its exit, resuming it across a daemon restart (see followProcess). */
  #follow(res: WireResponse, signal: AbortSignal | undefined, h: ProcessEventHandlers): Promise<ProcessExit | null> {
    return followProcess(res, h, {
      reconnectMs: this.#http.reconnectTimeoutMs,
      signal,
      reopen: (pid, at) => this.#http.request('GET', `${this.#base}/processes/${pid}/output`, { query: { ...at }, streaming: true, signal }),
    });
  }

  signal(sel: ProcessSelector, signal: SignalSpec = 'SIGTERM'): Promise<void> {
    return this.#http.send('POST', `${this.#base}/processes/${selectorSegment(sel)}/signal`, { json: { signal: normaliseSignal(signal) } });
  }

  /** Writes to a process started with stdin open; `eof` closes its stdin afterwards. */
  writeStdin(sel: ProcessSelector, data: string | Uint8Array | undefined, eof = false): Promise<void> {
    const body = { ...(data !== undefined ? { data: toBase64(toBytes(data)) } : {}), ...(eof ? { eof: true } : {}) };
    return this.#http.send('POST', `${this.#base}/processes/${selectorSegment(sel)}/stdin`, { json: body });
  }

  /** A process with live stdin over the WebSocket (no terminal). Resolves once it runs. */
  stream(opts: StreamOptions): Promise<StreamSession> {
    const { onWaiting, ...rest } = opts;
    return this.#openStream({ op: 'spawn', spawn: spawnRequest(rest.cmd, rest, { pty: rest.pty, cols: rest.cols, rows: rest.rows }) }, onWaiting);
  }

  /** An interactive terminal (default `bash -l`). Resolves once it runs. */
  pty(opts: PtyOptions): Promise<PtySession & StreamSession> {
    return this.#openStream({ op: 'spawn', spawn: spawnRequest(opts.cmd ?? ['bash', '-l'], opts, { pty: true, cols: opts.cols, rows: opts.rows }) });
  }

  /** Re-attaches to a running process over the WebSocket, with live stdin. */
  attachStream(sel: ProcessSelector): Promise<StreamSession> {
    return this.#openStream({ op: 'attach', ...selectorObject(sel) });
  }

  #openStream(open: StreamOpen, onWaiting?: StreamOptions['onWaiting']): Promise<StreamSession> {
    const ctor = resolveWebSocket(this.#WebSocket);
    const connect = () => openWebSocket(ctor, this.#http.wsUrl(`${this.#base}/stream`), this.#http.authHeaders());
    return StreamSession.open(connect(), open, onWaiting, { connect, reconnectMs: this.#http.reconnectTimeoutMs });
  }
}

/** The fork body: an absent count is left to the server's default (1); absent metadata and env to the parent's. */
export function forkRequest(opts: ForkOptions): ForkRequest {
  return {
    ...(opts.count !== undefined ? { count: opts.count } : {}),
    ...(opts.metadata !== undefined ? { metadata: opts.metadata } : {}),
    ...(opts.env !== undefined ? { env: opts.env } : {}),
  };
}

/** `TERM`, `sigterm` and `SIGTERM` all mean SIGTERM; numeric strings are numbers. */
export function normaliseSignal(signal: SignalSpec): SignalSpec {
  if (typeof signal === 'number') return signal;
  if (/^[0-9]+$/.test(signal)) return Number(signal);
  const up = signal.toUpperCase();
  return up.startsWith('SIG') ? up : `SIG${up}`;
}
