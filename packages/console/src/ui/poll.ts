/**
 * Calls `fn` now and every `ms` while the tab is visible, never two at once
 * (each call is an audited API call: a hidden tab makes none). Returns what stops it.
 */
export function poll(fn: () => Promise<unknown>, ms: number): () => void {
  let busy = false;
  const tick = () => {
    if (busy || document.visibilityState === 'hidden') return;
    busy = true;
    void fn()
      .catch(() => {})
      .finally(() => (busy = false));
  };
  tick();
  const timer = setInterval(tick, ms);
  const onShow = () => document.visibilityState === 'visible' && tick();
  document.addEventListener('visibilitychange', onShow);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onShow);
  };
}
