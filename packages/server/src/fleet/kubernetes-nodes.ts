import { isIP } from 'node:net';
import { z } from 'zod';
import { NODE_ID_PATTERN } from '@forkd/protocol';
import type { Logger } from '../shared/logger.js';
import { SERVICE_ACCOUNT_DIR, type KubernetesApi } from './kubernetes-api.js';
import type { NodeClient } from './node-directory.js';
import { nodeCapacity } from './node-heartbeat.js';
import type { NodeHeartbeat } from './registered-nodes.js';

/** A node found as a ready pod of the node DaemonSet. */
export interface DiscoveredNode {
  /** The Kubernetes node the pod runs on: the node's id in the fleet (the DaemonSet's FORKD_NODE_ID). */
  id: string;
  url: string;
  pod: string;
}

export type PodListResult = { ok: true; nodes: DiscoveredNode[] } | { ok: false; error: string };

const Pod = z.object({
  metadata: z.object({
    name: z.string().max(253),
    deletionTimestamp: z.string().optional().nullable(),
    ownerReferences: z.array(z.object({ kind: z.string().max(253), name: z.string().max(253), controller: z.boolean().optional().nullable() })).max(64).optional().nullable(),
  }),
  spec: z.object({ nodeName: z.string().max(253).optional().nullable() }).optional().nullable(),
  status: z
    .object({
      phase: z.string().max(64).optional().nullable(),
      podIP: z.string().max(64).optional().nullable(),
      conditions: z.array(z.object({ type: z.string().max(128), status: z.string().max(16) })).max(64).optional().nullable(),
    })
    .optional()
    .nullable(),
});
const PodList = z.object({ kind: z.literal('PodList'), items: z.array(z.unknown()).max(100_000) });

/** How the node pods are told apart and reached. */
export interface NodePods {
  /** The DaemonSet that must control a pod (a pod anyone else made with the same labels would be handed the node token). */
  daemonSet: string;
  port: number;
  scheme: 'http' | 'https';
}

/**
 * The nodes in a pod list from the API server: pods the node DaemonSet
 * controls that run, are ready and are not being deleted, on a node whose
 * name is a valid node id, with an IP address; one per Kubernetes node (the
 * first ready one by pod name, while a rolling update briefly has two). A
 * malformed pod is skipped, a malformed list is an error: this is parsed as
 * untrusted bytes.
 */
export function parsePodList(json: unknown, o: NodePods): PodListResult {
  const list = PodList.safeParse(json);
  if (!list.success) return { ok: false, error: `not a pod list: ${list.error.issues[0]?.message ?? 'invalid'}` };
  const nodes = new Map<string, DiscoveredNode>();
  const pods = list.data.items.flatMap((i) => {
    const p = Pod.safeParse(i);
    return p.success ? [p.data] : [];
  });
  for (const p of pods.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
    const id = p.spec?.nodeName ?? '';
    const ip = p.status?.podIP ?? '';
    const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    const ours = p.metadata.ownerReferences?.some((r) => r.controller === true && r.kind === 'DaemonSet' && r.name === o.daemonSet) ?? false;
    if (!ours || p.metadata.deletionTimestamp || p.status?.phase !== 'Running' || !ready || !NODE_ID_PATTERN.test(id) || !isIP(ip) || nodes.has(id)) continue;
    nodes.set(id, { id, url: `${o.scheme}://${isIP(ip) === 6 ? `[${ip}]` : ip}:${o.port}`, pod: p.metadata.name });
  }
  return { ok: true, nodes: [...nodes.values()] };
}

/** Label selectors as forkd accepts them: `key=value` pairs, comma-separated (what a DaemonSet's pods carry). */
const SELECTOR = /^(?:[a-z0-9A-Z./-]{1,253}=[a-z0-9A-Z._-]{0,63})(?:,[a-z0-9A-Z./-]{1,253}=[a-z0-9A-Z._-]{0,63})*$/;

export interface KubernetesDiscoveryConfig extends NodePods {
  /** The node pods' labels (FORKD_KUBERNETES_NODE_SELECTOR); daemonSet is FORKD_KUBERNETES_NODE_DAEMONSET (default forkd-node), port FORKD_KUBERNETES_NODE_PORT (8787), scheme FORKD_KUBERNETES_NODE_SCHEME (http; https when the nodes serve TLS). */
  selector: string;
  /** Where the service account's token, CA and namespace are (FORKD_KUBERNETES_SERVICE_ACCOUNT_DIR: a token projected elsewhere). */
  serviceAccountDir: string;
}

/** FORKD_NODE_DISCOVERY=kubernetes and its settings; undefined when discovery is by heartbeat (the default). */
export function kubernetesDiscoveryConfig(env: NodeJS.ProcessEnv): KubernetesDiscoveryConfig | undefined {
  const mode = env.FORKD_NODE_DISCOVERY || 'heartbeat';
  if (mode === 'heartbeat') return undefined;
  if (mode !== 'kubernetes') throw new Error('FORKD_NODE_DISCOVERY: heartbeat or kubernetes');
  const selector = env.FORKD_KUBERNETES_NODE_SELECTOR || 'app.kubernetes.io/name=forkd,app.kubernetes.io/component=node';
  if (!SELECTOR.test(selector)) throw new Error('FORKD_KUBERNETES_NODE_SELECTOR: key=value label pairs, comma-separated');
  const port = Number(env.FORKD_KUBERNETES_NODE_PORT || 8787);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error('FORKD_KUBERNETES_NODE_PORT: a port (1-65535)');
  const scheme = env.FORKD_KUBERNETES_NODE_SCHEME || 'http';
  if (scheme !== 'http' && scheme !== 'https') throw new Error('FORKD_KUBERNETES_NODE_SCHEME: http or https');
  const daemonSet = env.FORKD_KUBERNETES_NODE_DAEMONSET || 'forkd-node';
  if (!/^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/.test(daemonSet)) throw new Error('FORKD_KUBERNETES_NODE_DAEMONSET: a Kubernetes object name');
  return { selector, port, scheme, daemonSet, serviceAccountDir: env.FORKD_KUBERNETES_SERVICE_ACCOUNT_DIR || SERVICE_ACCOUNT_DIR };
}

/** A node that does not answer within this is skipped this round: one hung node holds up no other's. */
const POLL_TIMEOUT_MS = 10_000;

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export interface KubernetesDiscoveryOptions extends KubernetesDiscoveryConfig {
  api: KubernetesApi;
  /** Where a found node is recorded, as if it had sent a heartbeat (RegisteredNodes). */
  nodes: { heartbeat(hb: NodeHeartbeat): Promise<unknown> };
  /** The token every node pod answers (FORKD_NODE_TOKEN_FILE: a Secret they share). */
  token: string;
  connect: (url: string, token: string) => NodeClient;
  everyMs: number;
  /** How long one node's answer is waited for (default 10 s). */
  pollTimeoutMs?: number;
  logger: Logger;
}

/**
 * Node discovery through the Kubernetes API instead of self-registration:
 * every `everyMs` the control plane lists the node DaemonSet's pods, asks
 * each ready one what it can take (stats and templates over its contract,
 * the same capacity a heartbeat carries) and records that as the node's
 * heartbeat. A pod that goes away or stops answering is simply not heard
 * from: the deadlines and the lost-node watch treat it as a silent node.
 */
export function startKubernetesDiscovery(o: KubernetesDiscoveryOptions): { stop(): void; round(): Promise<void> } {
  const clients = new Map<string, NodeClient>();
  const failing = new Set<string>();
  let stopped = false;
  const path = `/api/v1/namespaces/${encodeURIComponent(o.api.namespace)}/pods?labelSelector=${encodeURIComponent(o.selector)}`;
  const poll = async (n: DiscoveredNode) => {
    if (stopped) return;
    let client = clients.get(n.url);
    if (!client) clients.set(n.url, (client = o.connect(n.url, o.token)));
    try {
      await o.nodes.heartbeat({ id: n.id, url: n.url, token: o.token, capacity: await within(nodeCapacity(client), o.pollTimeoutMs ?? POLL_TIMEOUT_MS) });
      if (failing.delete(n.id)) o.logger.info('node answers again', { node: n.id, url: n.url });
    } catch (err) {
      if (!failing.has(n.id)) o.logger.warn('node pod does not answer', { node: n.id, pod: n.pod, url: n.url, error: String(err) });
      failing.add(n.id);
    }
  };
  let listFailing = false;
  const round = async () => {
    let found: PodListResult;
    try {
      found = parsePodList(await o.api.get(path), o);
    } catch (err) {
      found = { ok: false, error: String(err) };
    }
    if (!found.ok) {
      if (!listFailing) o.logger.warn('cannot list the node pods', { namespace: o.api.namespace, selector: o.selector, error: found.error });
      listFailing = true;
      return;
    }
    listFailing = false;
    const urls = new Set(found.nodes.map((n) => n.url));
    for (const [url, c] of clients) {
      if (urls.has(url)) continue;
      c.close();
      clients.delete(url);
    }
    await Promise.all(found.nodes.map(poll));
  };
  // One round at a time: a slow API server or node delays the next round, never stacks them.
  let busy: Promise<void> | undefined;
  const tick = () => (busy ??= round().finally(() => (busy = undefined)));
  void tick();
  const timer = setInterval(() => void tick(), o.everyMs);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
      for (const c of clients.values()) c.close();
      clients.clear();
    },
    round: async () => {
      await busy;
      await tick();
    },
  };
}
