import { ForkdError, Limits, type CreateSandboxRequest, type SandboxInfo, type TemplateInfo } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { ClaimSandbox, ForkOptions, NodeStats } from '../node-contract/node-types.js';
import type { Logger } from '../shared/logger.js';
import type { FleetStore, PlacedKind } from './fleet-store.js';
import type { NodeDirectory } from './node-directory.js';
import { chooseNode, hasRoom, type PlacementNeed } from './placement.js';
import { sumStats } from './fleet-stats.js';
import { TemplateCopies } from './template-copies.js';

const MB = 1024 * 1024;

const exhausted = (what: string) => new ForkdError('RESOURCE_EXHAUSTED', `${what}; try again when sandboxes are paused or deleted`, { limit: 'FLEET_CAPACITY' });

/**
 * The node contract over a fleet: the control plane's routes, E2B and MCP
 * take it as their one node, so a sandbox id is all a client needs. Calls on
 * a sandbox or snapshot go to the node holding it (placement in the fleet
 * store; an id the store does not know is looked for on every live node
 * once, then remembered); creates and builds go where chooseNode says
 * (a create's template copied there when no node holding it has room);
 * lists and stats gather every live node's.
 */
export class FleetService {
  readonly #store: FleetStore;
  readonly #dir: NodeDirectory;
  readonly #log: Logger | undefined;
  readonly #copies: TemplateCopies;

  constructor(store: FleetStore, dir: NodeDirectory, log?: Logger) {
    this.#store = store;
    this.#dir = dir;
    this.#log = log;
    this.#copies = new TemplateCopies(store, dir, log);
  }

  /** The node holding a sandbox, snapshot or template, and its contract. NOT_FOUND when no live node has it. */
  async locate(kind: PlacedKind, id: string): Promise<{ node: string; svc: NodeService }> {
    const placed = await this.#store.placement(kind, id);
    if (placed !== undefined) return { node: placed, svc: await this.#dir.client(placed) };
    for (const n of await this.#dir.live()) {
      const svc = await this.#dir.client(n.id);
      if (await this.#holds(svc, kind, id)) {
        await this.#store.place(kind, id, n.id);
        return { node: n.id, svc };
      }
    }
    throw new ForkdError('NOT_FOUND', `${kind} ${id} not found`);
  }

  async #holds(svc: NodeService, kind: PlacedKind, id: string): Promise<boolean> {
    try {
      if (kind === 'sandbox') await svc.get(id);
      else if (kind === 'snapshot') await svc.getSnapshot(id);
      else return (await svc.templates()).some((t) => t.name === id);
      return true;
    } catch (err) {
      // A node that is gone or does not answer in time does not hold it as far as this call can tell.
      if (err instanceof ForkdError && (err.code === 'NOT_FOUND' || err.code === 'UNAVAILABLE' || err.code === 'TIMEOUT')) return false;
      throw err;
    }
  }

  /** A node for new work; RESOURCE_EXHAUSTED when none can take it. */
  async choose(need: PlacementNeed, none = 'no node of the fleet can take this sandbox now'): Promise<{ node: string; svc: NodeService }> {
    const n = chooseNode(await this.#dir.live(), need, this.#dir.placedSince());
    if (!n) throw exhausted(none);
    this.#dir.notePlaced(n.id, need.memoryBytes);
    return { node: n.id, svc: await this.#dir.client(n.id) };
  }

  /** Whether a node takes `memoryBytes` more now (by its last heartbeat and what was placed since): active, live, room. */
  async canTake(nodeId: string, memoryBytes: number): Promise<boolean> {
    const n = (await this.#dir.live()).find((x) => x.id === nodeId);
    return !!n && hasRoom(n, { memoryBytes }, this.#dir.placedSince().get(nodeId) ?? 0);
  }

  /**
   * A fork made on another node than its snapshot's: the snapshot is
   * exported (incremental against the blob store), imported on the node
   * placement picks (its sandbox stays where it is: only the snapshot is
   * recorded there), and forked there.
   */
  async forkElsewhere(from: string, snapId: string, count: number, claim: ClaimSandbox | undefined, opts: ForkOptions | undefined): Promise<SandboxInfo[]> {
    const a = await this.#dir.client(from);
    const exp = await a.exportSnapshot(snapId);
    const target = await this.choose({ memoryBytes: 0, avoid: new Set([from]) });
    const snap = await target.svc.importSnapshot(exp.manifest);
    return target.svc.fork(snap.id, count, this.placing(target.node, claim), opts);
  }

  /** Places each new sandbox before its owner is claimed: no sandbox is reachable by id without knowing its node. */
  placing(node: string, claim: ClaimSandbox | undefined): ClaimSandbox {
    return async (id) => {
      await this.#store.place('sandbox', id, node);
      await claim?.(id);
    };
  }

  /**
   * On a node holding its template (by heartbeats, or the node a build or
   * copy just placed it on) when one of those has room; else on the node
   * placement picks among the rest, the template copied there first
   * (TemplateCopies). RESOURCE_EXHAUSTED when no node has room, or the copy
   * fails (the cause is logged, not shown to the tenant).
   */
  async create(req: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo> {
    const memoryBytes = (req.memoryMb ?? Limits.parse({}).memoryMb) * MB;
    const template = req.template ?? 'base';
    const live = await this.#dir.live();
    const holders = new Set(live.filter((n) => n.capacity.templates.includes(template)).map((n) => n.id));
    const placed = await this.#store.placement('template', template);
    if (placed) holders.add(placed);
    if (holders.size === 0) throw await this.#noHolder(template, live.length);
    const near = chooseNode(live, { memoryBytes, template, only: holders }, this.#dir.placedSince());
    const n = near ?? chooseNode(live, { memoryBytes, template }, this.#dir.placedSince());
    if (!n) throw exhausted(`no node can take a sandbox of template ${template} now`);
    this.#dir.notePlaced(n.id, memoryBytes);
    if (!near) {
      try {
        await this.#copies.copy(template, [...holders].filter((h) => h !== n.id), n.id);
      } catch (err) {
        this.#log?.warn('template copy failed', { template, node: n.id, error: String(err) });
        throw exhausted(`no node holding template ${template} can take this sandbox now, and it could not be copied to one that can`);
      }
    }
    return (await this.#dir.client(n.id)).create(req, this.placing(n.id, claim));
  }

  /** Why no live node holds `template`: no live node at all, only silent ones hold it (both passing states), or none does. */
  async #noHolder(template: string, live: number): Promise<ForkdError> {
    if (live === 0) return exhausted('no node of the fleet is live now');
    if ((await this.#dir.all()).some((n) => n.capacity.templates.includes(template))) return new ForkdError('UNAVAILABLE', `template ${template} is only on nodes that do not answer now; try again later`);
    return new ForkdError('NOT_FOUND', `template ${template} not found`);
  }

  /**
   * Every live node's sandboxes; a node that does not answer is left out
   * (and logged), not the whole list failed. An id two nodes list (a stale
   * copy kept on a node that came back after its sandbox was restored
   * elsewhere, see returned-nodes.ts) is shown once, from where it is placed.
   */
  async list(): Promise<SandboxInfo[]> {
    const per = await this.#each(async (svc, node) => ({ node, sandboxes: await svc.list() }));
    const nodesOf = new Map<string, string[]>();
    for (const { node, sandboxes } of per) for (const s of sandboxes) nodesOf.set(s.id, [...(nodesOf.get(s.id) ?? []), node]);
    const shownFrom = new Map<string, string>();
    for (const [id, nodes] of nodesOf) if (nodes.length > 1) shownFrom.set(id, (await this.#store.placement('sandbox', id)) ?? nodes[0]!);
    return per.flatMap(({ node, sandboxes }) => sandboxes.filter((s) => (shownFrom.get(s.id) ?? node) === node));
  }

  async templates(): Promise<TemplateInfo[]> {
    const byName = new Map<string, TemplateInfo>();
    for (const t of (await this.#each((svc) => svc.templates())).flat()) if (!byName.has(t.name)) byName.set(t.name, t);
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async stats(): Promise<NodeStats> {
    return sumStats(await this.#each((svc) => svc.stats()));
  }

  /** Runs `fn` on every live node at once; the answers of those that answered. */
  async #each<T>(fn: (svc: NodeService, node: string) => Promise<T>): Promise<T[]> {
    const nodes = await this.#dir.live();
    const got = await Promise.allSettled(nodes.map(async (n) => fn(await this.#dir.client(n.id), n.id)));
    const out: T[] = [];
    got.forEach((g, i) => {
      if (g.status === 'fulfilled') out.push(g.value);
      else this.#log?.warn('node did not answer', { node: nodes[i]?.id, error: String(g.reason) });
    });
    return out;
  }

  /** Nodes holding a template (every live node is asked). */
  async holdersOf(template: string): Promise<string[]> {
    const has = await this.#each(async (svc, node) => ((await svc.templates()).some((t) => t.name === template) ? node : undefined));
    return has.filter((n): n is string => n !== undefined);
  }

  get store(): FleetStore {
    return this.#store;
  }

  get directory(): NodeDirectory {
    return this.#dir;
  }
}
