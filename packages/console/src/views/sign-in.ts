import { ApiClient } from '../api.js';
import { field, h } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';

/**
 * The sign-in page: a key is tried on a real call before it is kept, so a
 * wrong one is refused here, with the server's reason.
 */
export function signInView(onSignedIn: (key: string) => void, makeClient: (key: string) => ApiClient = (k) => new ApiClient(k)): HTMLElement {
  const notice = new Notice();
  const input = h('input', { type: 'password', name: 'apiKey', autocomplete: 'off', required: true, spellcheck: 'false' });
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'forkd console'),
    h('p', { class: 'muted' }, 'Sign in with an API key. It is kept in this browser tab only and scopes everything to its tenant.'),
    field('API key', input),
    submit,
    notice.el,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    submit.disabled = true;
    notice.info('Checking the key…');
    makeClient(key)
      .get('/v1/sandboxes', { limit: 1 })
      .then(
        () => onSignedIn(key),
        (err: unknown) => {
          const code = (err as { code?: string }).code;
          if (code === 'UNAUTHENTICATED') notice.error({ code, message: 'this API key was refused. Check it and try again.' });
          else notice.error(err);
          input.focus();
        },
      )
      .finally(() => (submit.disabled = false));
  });
  queueMicrotask(() => input.focus());
  return h('div', { class: 'sign-in-page' }, form);
}
