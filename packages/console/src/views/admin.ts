import type { NodeInfo, TenantLimitsInfo } from '@forkd/protocol';
import { allSandboxes, isAdminKey, listKeys, listNodes, tenantLimits } from '../api/admin.js';
import { atLimit, tenantNames, usageText } from '../admin-model.js';
import { formatAge, formatBytes, formatMb } from '../format.js';
import { button, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { table, type Column } from '../ui/table.js';
import type { View } from '../view.js';
import { keysSection } from './admin-keys.js';
import { limitsSection } from './admin-limits.js';

type TenantRow = TenantLimitsInfo & { sandboxes: number };

const cell = (used: number, limit: number | null, fmt?: (n: number) => string) => h('span', { class: atLimit(used, limit) ? 'at-limit' : undefined }, usageText(used, limit, fmt));

const TENANT_COLUMNS: Column<TenantRow>[] = [
  { title: 'Tenant', cell: (t) => t.tenant },
  { title: 'Sandboxes', cell: (t) => String(t.sandboxes) },
  { title: 'Running', cell: (t) => cell(t.usage.runningSandboxes, t.limits.runningSandboxes) },
  { title: 'Memory', cell: (t) => cell(t.usage.memoryMb, t.limits.memoryMb, (n) => formatMb(n)) },
  { title: 'CPUs', cell: (t) => cell(t.usage.cpus, t.limits.cpus), minor: true },
  { title: 'Snapshots', cell: (t) => cell(t.usage.snapshots, t.limits.snapshots), minor: true },
  { title: 'Disk', cell: (t) => cell(t.usage.diskMb, t.limits.diskMb, (n) => formatMb(n)), minor: true },
];

const NODE_COLUMNS: Column<NodeInfo>[] = [
  { title: 'Node', cell: (n) => n.id },
  { title: 'State', cell: (n) => h('span', { class: `state node-${n.state}` }, n.state) },
  { title: 'Sandboxes', cell: (n) => `${n.sandboxes} (${n.capacity.running} running, ${n.capacity.paused} paused)` },
  { title: 'Memory free', cell: (n) => `${formatBytes(n.capacity.memoryFreeBytes)} of ${formatBytes(n.capacity.memoryBytes)}`, minor: true },
  { title: 'CPUs', cell: (n) => String(n.capacity.cpus), minor: true },
  { title: 'Pool free', cell: (n) => formatBytes(n.capacity.poolFreeBytes), minor: true },
  { title: 'Last seen', cell: (n) => `${formatAge(n.lastSeenAt, Date.now())} ago`, minor: true },
];

function section(id: string, title: string, ...body: Array<Node | string>): HTMLElement {
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...body);
}

/**
 * The admin page (admin keys; the nav hides it from others and a tenant key
 * is told it needs one): every tenant's limits and usage, the keys, and the
 * fleet's nodes when the server has more than one.
 */
export const adminView: View = (ctx) => {
  const notice = new Notice();
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const tenants = h('div', {});
  const nodes = h('div', {});
  let gone = false;
  const keys = keysSection(ctx, notice, () => void load());
  const limits = limitsSection(ctx, notice, () => void load());
  const load = async () => {
    try {
      const [keyList, sandboxes, fleet] = await Promise.all([listKeys(ctx.api), allSandboxes(ctx.api), listNodes(ctx.api)]);
      const names = tenantNames(keyList, sandboxes);
      const infos = await Promise.all(names.map((t) => tenantLimits(ctx.api, t)));
      if (gone) return;
      const rows = infos.map((l) => ({ ...l, sandboxes: sandboxes.filter((s) => s.tenant === l.tenant).length }));
      replace(tenants, table('Tenants', TENANT_COLUMNS, rows, 'No tenants yet.'));
      limits.update(infos);
      keys.update(keyList);
      replace(nodes, fleet ? table('Nodes', NODE_COLUMNS, fleet, 'No node has joined yet.') : h('p', { class: 'muted' }, 'This server runs one node (no fleet).'));
    } catch (err) {
      notice.error(err);
    }
  };
  isAdminKey(ctx.api).then(
    (admin) => {
      if (gone) return;
      if (!admin) return replace(body, h('p', { class: 'notice notice-error', role: 'alert' }, 'The admin page needs an admin key; this key is a tenant\'s.'));
      replace(body, h('div', { class: 'bar' }, button('Refresh', () => void load(), { class: 'quiet' })), section('tenants-title', 'Tenants', tenants, limits.el), keys.el, section('nodes-title', 'Nodes', nodes));
      void load();
    },
    (err: unknown) => notice.error(err),
  );
  const el = h('section', { class: 'page' }, h('h1', {}, 'Admin'), notice.el, body);
  return { el, dispose: () => void (gone = true) };
};
