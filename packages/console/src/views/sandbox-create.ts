import type { CreateSandboxRequest, SandboxInfo } from '@forkd/protocol';
import { createSandbox, listTemplates } from '../api/sandboxes.js';
import { parsePairs } from '../format.js';
import { field, h } from '../ui/dom.js';
import type { Notice } from '../ui/notice.js';
import type { ViewContext } from '../view.js';

/** A number field's value, or undefined when left empty (the server's default). */
function num(input: HTMLInputElement): number | undefined {
  return input.value.trim() === '' ? undefined : Number(input.value);
}

/** The request a filled-in form makes; what is left empty is left to the server. */
export function createRequest(v: { template: string; cpus?: number | undefined; memoryMb?: number | undefined; diskMb?: number | undefined; network: string; metadata: string }): CreateSandboxRequest | string {
  const meta = parsePairs(v.metadata);
  if (!meta.ok) return `Metadata: ${meta.error}`;
  const req: CreateSandboxRequest = { template: v.template || 'base' };
  if (v.cpus !== undefined) req.cpus = v.cpus;
  if (v.memoryMb !== undefined) req.memoryMb = v.memoryMb;
  if (v.diskMb !== undefined) req.diskMb = v.diskMb;
  if (v.network === 'none' || v.network === 'egress') req.network = { mode: v.network };
  if (Object.keys(meta.value).length) req.metadata = meta.value;
  return req;
}

/** The create form: template (from the tenant's list), limits, network mode and metadata. */
export function createForm(ctx: ViewContext, created: (s: SandboxInfo) => void, notice: Notice): HTMLElement {
  const template = h('select', { name: 'template' }, h('option', { value: 'base' }, 'base'));
  void listTemplates(ctx.api).then(
    (ts) => {
      for (const t of ts) if (t.name !== 'base') template.append(h('option', { value: t.name }, t.name));
    },
    () => {},
  );
  const cpus = h('input', { name: 'cpus', type: 'number', min: 0.05, max: 256, step: 0.05, placeholder: '1' });
  const memory = h('input', { name: 'memoryMb', type: 'number', min: 32, step: 1, placeholder: '512' });
  const disk = h('input', { name: 'diskMb', type: 'number', min: 1, step: 1, placeholder: 'server default' });
  const network = h('select', { name: 'network' }, h('option', { value: '' }, 'default'), h('option', { value: 'none' }, 'none (loopback only)'), h('option', { value: 'egress' }, 'egress'));
  const metadata = h('input', { name: 'metadata', placeholder: 'owner=alice, run=7' });
  const submit = h('button', { type: 'submit' }, 'Create sandbox');
  const form = h(
    'form',
    { class: 'create grid' },
    field('Template', template),
    field('CPUs', cpus),
    field('Memory (MiB)', memory),
    field('Disk (MiB)', disk),
    field('Network', network),
    field('Metadata', metadata),
    submit,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const req = createRequest({ template: template.value, cpus: num(cpus), memoryMb: num(memory), diskMb: num(disk), network: network.value, metadata: metadata.value });
    if (typeof req === 'string') return notice.error({ code: 'INVALID_ARGUMENT', message: req });
    submit.disabled = true;
    notice.info('Creating…');
    createSandbox(ctx.api, req)
      .then(created, (err: unknown) => notice.error(err))
      .finally(() => (submit.disabled = false));
  });
  return h('details', { class: 'panel' }, h('summary', {}, 'New sandbox'), form);
}
