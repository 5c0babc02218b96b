import type { ApiClient } from './api.js';

/** What a view gets: the signed-in client, the route's params and query, and ways to move on. */
export interface ViewContext {
  api: ApiClient;
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
  /** Aborted when the page is left: calls made with it stop then (a poll in flight does not outlive its page). */
  signal: AbortSignal;
  /** Goes to a `#/…` path (with an optional query). */
  navigate(path: string, query?: Record<string, string | undefined>): void;
  /** Forgets the key and shows the sign-in page. */
  signOut(): void;
}

/** A view on screen: its element, and what stops its timers and sockets when the route changes. */
export interface Mounted {
  el: HTMLElement;
  dispose?(): void;
}

/** One page of the console: renders at once (showing "loading" as it fetches) and cleans up in `dispose`. */
export type View = (ctx: ViewContext) => Mounted;

/** A route table entry: `pattern` as router.ts matches it; `nav` puts it in the top bar under `title`. */
export interface RouteEntry {
  pattern: string;
  title: string;
  view: View;
  nav?: boolean;
  /** Its nav link is shown to admin keys only (the page itself also says when a key is not one). */
  adminOnly?: boolean;
}
