import type { TenantLimitsInfo } from '@forkd/protocol';
import { setTenantLimits } from '../api/admin.js';
import { limitText, parseLimit } from '../admin-model.js';
import { field, h, replace } from '../ui/dom.js';
import type { Notice } from '../ui/notice.js';
import type { ViewContext } from '../view.js';

/**
 * A tenant's limit overrides, edited whole as the API replaces them: each
 * limit a number, `none`, or empty for the server's default. The names are
 * those of the answer's `limits` (said once, in @forkd/protocol).
 */
export function limitsSection(ctx: ViewContext, notice: Notice, reload: () => void): { el: HTMLElement; update(rows: readonly TenantLimitsInfo[]): void } {
  const tenant = h('select', { name: 'tenant' });
  const inputs = h('div', { class: 'contents' });
  let rows: readonly TenantLimitsInfo[] = [];
  const fill = () => {
    const info = rows.find((r) => r.tenant === tenant.value);
    replace(inputs, ...Object.keys(info?.limits ?? {}).map((name) => {
      const v = (info?.overrides as Record<string, number | null | undefined> | undefined)?.[name];
      return field(name, h('input', { name, value: limitText(v), placeholder: 'default', class: 'narrow', autocomplete: 'off' }));
    }));
  };
  tenant.addEventListener('change', fill);
  const form = h('form', { class: 'filters', 'aria-label': 'Tenant limits' }, field('Tenant to limit', tenant), inputs, h('button', { type: 'submit' }, 'Save limits'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body: Record<string, number | null> = {};
    for (const input of inputs.querySelectorAll('input')) {
      const p = parseLimit(input.value);
      if (!p.ok) return notice.error({ code: 'INVALID_ARGUMENT', message: `${input.name}: ${p.error}` });
      if (p.value !== undefined) body[input.name] = p.value;
    }
    const t = tenant.value;
    notice.info(`Saving ${t}'s limits…`);
    setTenantLimits(ctx.api, t, body).then(() => (notice.info(`Saved ${t}'s limits`), reload()), (err: unknown) => notice.error(err));
  });
  return {
    el: h('div', {}, h('h3', {}, 'Limits'), h('p', { class: 'muted' }, 'Empty: the server\'s default; none: no limit.'), form),
    update(next) {
      const keep = tenant.value;
      rows = next;
      replace(tenant, ...next.map((r) => h('option', { value: r.tenant, selected: r.tenant === keep }, r.tenant)));
      fill();
    },
  };
}
