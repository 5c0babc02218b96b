import type { NetworkRules, SandboxInfo, SetNetworkRequest } from '@forkd/protocol';
import { setSandboxNetwork } from '../api/sandboxes.js';
import { field, h } from '../ui/dom.js';
import type { Notice } from '../ui/notice.js';
import type { ViewContext } from '../view.js';

/** Rules typed one per line or comma-separated; blanks dropped. */
export function ruleList(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((r) => r.trim())
    .filter(Boolean);
}

/**
 * The request a filled-in form makes: its mode and rules; what the form does
 * not show (forced denials, limits) is sent back as it was, so a save
 * changes only what was edited.
 */
export function networkRequest(current: NetworkRules | undefined, mode: string, allow: string, deny: string): SetNetworkRequest {
  return { ...(current ?? {}), mode: mode === 'egress' ? 'egress' : 'none', allowOut: ruleList(allow), denyOut: ruleList(deny) };
}

/** Edits the sandbox's network mode and egress rules (PUT /v1/sandboxes/{id}/network); the server checks every rule. */
export function networkForm(ctx: ViewContext, s: SandboxInfo, notice: Notice, changed: (s: SandboxInfo) => void): HTMLElement {
  const n = s.network;
  let current = n;
  const mode = h('select', { name: 'mode' }, h('option', { value: 'none', selected: n?.mode !== 'egress' }, 'none (loopback only)'), h('option', { value: 'egress', selected: n?.mode === 'egress' }, 'egress'));
  const allow = h('textarea', { name: 'allowOut', rows: 2, placeholder: 'example.com, *.example.org, 203.0.113.0/24' });
  allow.value = (n?.allowOut ?? []).join('\n');
  const deny = h('textarea', { name: 'denyOut', rows: 2 });
  deny.value = (n?.denyOut ?? []).join('\n');
  const submit = h('button', { type: 'submit' }, 'Save network');
  const form = h('form', { class: 'grid' }, field('Mode', mode), field('Allow out', allow, 'one rule a line'), field('Deny out', deny, 'one rule a line'), submit);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    notice.info('Saving…');
    setSandboxNetwork(ctx.api, s.id, networkRequest(current, mode.value, allow.value, deny.value))
      .then(
        (updated) => {
          current = updated.network;
          notice.info('Network saved: it applies from the next connection');
          changed(updated);
        },
        (err: unknown) => notice.error(err),
      )
      .finally(() => (submit.disabled = false));
  });
  return h('details', {}, h('summary', {}, 'Change network'), form);
}
