import { ForkdError, Limits, SNAPSHOT_ID_PATTERN, type BuildTemplateRequest, type BuildProgress } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { FleetService } from './fleet-service.js';
import { DELETED_UNDER } from './fleet-store.js';
import { someNodeLost } from './returned-nodes.js';
import { sourceTemplateOf } from '../shared/dockerfile/dockerfile-source.js';

/** Calls whose first argument is a sandbox id: they go to the node holding it, as they are. */
const BY_SANDBOX = [
  'get', 'setTimeout', 'setNetwork', 'setCredentials', 'metrics',
  'spawn', 'attach', 'listProcesses', 'signal', 'writeStdin',
  'readFile', 'writeFile', 'listDir', 'stat', 'mkdir', 'move', 'remove', 'watch', 'connectPort',
  'timeline', 'pause', 'resume', 'rewind', 'tree',
] as const satisfies readonly (keyof NodeService)[];

/** Calls whose first argument is a snapshot id. */
const BY_SNAPSHOT = ['getSnapshot', 'pinSnapshot', 'exportSnapshot'] as const satisfies readonly (keyof NodeService)[];

type Routed = (typeof BY_SANDBOX)[number] | (typeof BY_SNAPSHOT)[number];

function routed<K extends Routed>(fleet: FleetService, kind: 'sandbox' | 'snapshot', k: K): NodeService[K] {
  const call = async (id: string, ...rest: unknown[]): Promise<unknown> => {
    const { svc } = await fleet.locate(kind, id);
    return (svc[k] as (...a: unknown[]) => Promise<unknown>).call(svc, id, ...rest);
  };
  return call as NodeService[K];
}

/**
 * The node contract served by a fleet (see FleetService): what the control
 * plane's API, E2B and MCP are given instead of one node. Calls on an id are
 * routed by the tables above; the rest say where they go here. A method
 * added to the contract fails to compile until it is put in a table or
 * written out below.
 */
export function fleetNode(fleet: FleetService): NodeService {
  const table = Object.fromEntries([
    ...BY_SANDBOX.map((k) => [k, routed(fleet, 'sandbox', k)]),
    ...BY_SNAPSHOT.map((k) => [k, routed(fleet, 'snapshot', k)]),
  ]) as Pick<NodeService, Routed>;
  return {
    ...table,
    create: (req, claim) => fleet.create(req, claim),
    list: () => fleet.list(),
    templates: () => fleet.templates(),
    stats: () => fleet.stats(),
    async delete(id) {
      const { svc } = await fleet.locate('sandbox', id);
      await svc.delete(id);
      // A lost node may hold a stale copy (it was restored from there): it must not come back to life with that node.
      if (await someNodeLost(fleet.store)) await fleet.store.place('deleted', id, DELETED_UNDER);
      await fleet.store.unplace('sandbox', id);
    },
    async snapshot(id, opts) {
      const { node, svc } = await fleet.locate('sandbox', id);
      const snap = await svc.snapshot(id, opts);
      await fleet.store.place('snapshot', snap.id, node);
      return snap;
    },
    async deleteSnapshot(snapId) {
      const { svc } = await fleet.locate('snapshot', snapId);
      await svc.deleteSnapshot(snapId);
      await fleet.store.unplace('snapshot', snapId);
    },
    async fork(source, count, claim, opts) {
      const { node, svc } = await fleet.locate(SNAPSHOT_ID_PATTERN.test(source) ? 'snapshot' : 'sandbox', source);
      if (await fleet.canTake(node, count * (await forkMemoryBytes(svc, source)))) return svc.fork(source, count, fleet.placing(node, claim), opts);
      // Its node takes no new sandboxes (draining, out of pool space): the snapshot travels to one that does.
      const snapId = SNAPSHOT_ID_PATTERN.test(source) ? source : (await svc.snapshot(source, {})).id;
      return fleet.forkElsewhere(node, snapId, count, claim, opts);
    },
    /** On a node with room (the caller moving a sandbox picks its node through that node's own contract); placed there. */
    async importSnapshot(manifest, opts) {
      const { node, svc } = await fleet.choose({ memoryBytes: 0 });
      const snap = await svc.importSnapshot(manifest, opts);
      await fleet.store.place('snapshot', snap.id, node);
      if (opts?.asSandbox) await fleet.store.place('sandbox', snap.sandboxId, node);
      return snap;
    },
    buildTemplate: (req, progress, claim) => buildOnFleet(fleet, req, progress, claim),
    exportTemplate: async (name) => (await fleet.locate('template', name)).svc.exportTemplate(name),
    /** On a node with room, placed there (creates copy templates themselves: see FleetService.create). */
    async importTemplate(manifest) {
      const { node, svc } = await fleet.choose({ memoryBytes: 0 });
      const t = await svc.importTemplate(manifest);
      await fleet.store.place('template', t.name, node);
      return t;
    },
    /** Every copy (a template copied to where creates needed it is on several nodes). */
    async deleteTemplate(name) {
      const holders = await fleet.holdersOf(name);
      if (holders.length === 0) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
      for (const node of holders) await (await fleet.directory.client(node)).deleteTemplate(name);
      await fleet.store.unplace('template', name);
    },
  };
}

/** What one fork of `source` holds: its sandbox's memory limit (the default when that sandbox is gone). */
async function forkMemoryBytes(svc: NodeService, source: string): Promise<number> {
  const id = SNAPSHOT_ID_PATTERN.test(source) ? (await svc.getSnapshot(source)).sandboxId : source;
  const mb = await svc.get(id).then((s) => s.limits.memoryMb, () => Limits.parse({}).memoryMb);
  return mb * 1024 * 1024;
}

/** A build runs where its base template is (the most free one of those), and the template is placed there. */
async function buildOnFleet(fleet: FleetService, req: BuildTemplateRequest, progress: BuildProgress, claim: Parameters<NodeService['buildTemplate']>[2]) {
  const from = sourceTemplateOf(req) ?? 'base';
  const { node, svc } = await fleet.choose({ memoryBytes: 0, template: from });
  const t = await svc.buildTemplate(req, progress, fleet.placing(node, claim));
  await fleet.store.place('template', t.name, node);
  return t;
}
