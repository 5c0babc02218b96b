import { hostname } from 'node:os';
import { join } from 'node:path';
import { NODE_ID_PATTERN } from '@forkd/protocol';
import { kubernetesDiscoveryConfig, type KubernetesDiscoveryConfig } from '../fleet/kubernetes-nodes.js';
import { DEFAULT_NODE_CALL_TIMEOUTS, type NodeCallTimeouts } from '../node-http/call-deadline.js';

/** How nodes and a control plane find each other (see fleet/). */
export interface FleetConfig {
  /** Role node: the control plane(s) to join (FORKD_CONTROL_PLANE_URL, comma-separated replicas); empty: a node only a `--node` control plane drives. */
  controlPlaneUrls: string[];
  /** The join token: the control plane's own (made at first start), a node's copy of it (FORKD_JOIN_TOKEN_FILE, default <state dir>/join.token). */
  joinTokenFile: string;
  /** What the node calls itself in the fleet (FORKD_NODE_ID, default the host name). */
  nodeId: string;
  /** How the control plane reaches this node (FORKD_ADVERTISE_URL, default http://<FORKD_HOST>:<FORKD_PORT>). */
  advertiseUrl?: string | undefined;
  /** A heartbeat this often (FORKD_HEARTBEAT_S, default 5). */
  heartbeatS: number;
  /** A node silent this long takes no new work (FORKD_NODE_DEADLINE_S, default 15). */
  deadlineS: number;
  /** A node silent this long is lost: its sandboxes are marked lost (FORKD_NODE_LOST_S, default 120). */
  lostS: number;
  /** The control plane exports every running sandbox's newest snapshot this often, so a lost node's sandboxes can be restored elsewhere (FORKD_EXPORT_INTERVAL_S; 0, the default: never; needs a blob store every node shares, FORKD_BLOB_STORE). */
  exportIntervalS: number;
  /** HTTPS for the API and the node contract: certificate chain and key, PEM (FORKD_TLS_CERT_FILE, FORKD_TLS_KEY_FILE; both or neither). Clients trust a private CA by NODE_EXTRA_CA_CERTS. */
  tls?: { certFile: string; keyFile: string } | undefined;
  /**
   * Role control-plane: how long it waits for a node's answer, by kind of
   * call (FORKD_NODE_CALL_TIMEOUT_S, `READ,LIFECYCLE,TRANSFER` seconds,
   * default `30,300,3600`; fewer numbers leave the rest at their default).
   * Past it the call fails with TIMEOUT.
   */
  nodeCallTimeouts: NodeCallTimeouts;
  /** Role control-plane: nodes are found as the node DaemonSet's pods through the Kubernetes API (FORKD_NODE_DISCOVERY=kubernetes, see fleet/kubernetes-nodes.ts), not by their heartbeats. */
  kubernetes?: KubernetesDiscoveryConfig | undefined;
}

function seconds(v: string | undefined, def: number, name: string): number {
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || n > 86_400) throw new Error(`${name} must be seconds (0 < s ≤ 86400), got ${JSON.stringify(v)}`);
  return n;
}

function nodeCallTimeouts(v: string | undefined): NodeCallTimeouts {
  const name = 'FORKD_NODE_CALL_TIMEOUT_S';
  const parts = (v ?? '').split(',').map((x) => x.trim());
  if (parts.length > 3) throw new Error(`${name}: READ,LIFECYCLE,TRANSFER seconds, got ${JSON.stringify(v)}`);
  const d = DEFAULT_NODE_CALL_TIMEOUTS;
  const [read, lifecycle, transfer] = [parts[0], parts[1], parts[2]];
  return {
    readMs: seconds(read, d.readMs / 1000, name) * 1000,
    lifecycleMs: seconds(lifecycle, d.lifecycleMs / 1000, name) * 1000,
    transferMs: seconds(transfer, d.transferMs / 1000, name) * 1000,
  };
}

/** The host name as a node id: lowercased, anything else than [a-z0-9.-] made `-`. */
export function defaultNodeId(host = hostname()): string {
  const id = host.toLowerCase().replace(/[^a-z0-9.-]/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '').slice(0, 63);
  return NODE_ID_PATTERN.test(id) ? id : 'node';
}

export function fleetConfig(env: NodeJS.ProcessEnv, stateDir: string): FleetConfig {
  const nodeId = env.FORKD_NODE_ID || defaultNodeId();
  if (!NODE_ID_PATTERN.test(nodeId)) throw new Error('FORKD_NODE_ID: lowercase letters, digits, . and -, at most 63');
  const cps = (env.FORKD_CONTROL_PLANE_URL ?? '').split(',').map((u) => u.trim()).filter(Boolean);
  if (cps.some((u) => !/^https?:\/\/[^\s,]+$/.test(u))) throw new Error('FORKD_CONTROL_PLANE_URL: http:// or https:// URLs, comma-separated');
  const deadlineS = seconds(env.FORKD_NODE_DEADLINE_S, 15, 'FORKD_NODE_DEADLINE_S');
  const lostS = seconds(env.FORKD_NODE_LOST_S, 120, 'FORKD_NODE_LOST_S');
  if (lostS < deadlineS) throw new Error('FORKD_NODE_LOST_S must be at least FORKD_NODE_DEADLINE_S');
  const [certFile, keyFile] = [env.FORKD_TLS_CERT_FILE || undefined, env.FORKD_TLS_KEY_FILE || undefined];
  if (!certFile !== !keyFile) throw new Error('FORKD_TLS_CERT_FILE and FORKD_TLS_KEY_FILE go together');
  return {
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    kubernetes: kubernetesDiscoveryConfig(env),
    controlPlaneUrls: cps,
    joinTokenFile: env.FORKD_JOIN_TOKEN_FILE || join(stateDir, 'join.token'),
    nodeId,
    advertiseUrl: env.FORKD_ADVERTISE_URL || undefined,
    heartbeatS: seconds(env.FORKD_HEARTBEAT_S, 5, 'FORKD_HEARTBEAT_S'),
    exportIntervalS: env.FORKD_EXPORT_INTERVAL_S === '0' ? 0 : seconds(env.FORKD_EXPORT_INTERVAL_S, 0, 'FORKD_EXPORT_INTERVAL_S'),
    deadlineS,
    lostS,
    nodeCallTimeouts: nodeCallTimeouts(env.FORKD_NODE_CALL_TIMEOUT_S),
  };
}
