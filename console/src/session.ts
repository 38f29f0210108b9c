/**
 * The console's session (D8): the session token from `POST /v1/auth/login` or `/v1/auth/register`, kept in
 * localStorage so a reload or a new tab stays signed in, and the operator token (`GATEWAY_ADMIN_TOKEN`, D9)
 * for the operator pages, kept apart in sessionStorage: it opens every account, so it lives only as long as
 * the tab and is never shared with other tabs. Only the browser holds them; the gateway stores session
 * tokens' hashes.
 *
 * A tiny external store: React reads it with `useSession()` (useSyncExternalStore), the API client with
 * `getSession()`. Another tab signing out (a `storage` event) signs this one out too.
 */
import { useSyncExternalStore } from "react";

/** What the browser knows about who is signed in. */
export interface Session {
  /** The customer session token (secret), or null when signed out. */
  token: string | null;
  /** The account id that came with the token. */
  userId: string | null;
  /** The operator token (secret) for the operator pages, or null. */
  operatorToken: string | null;
  /** Why the last session ended, shown once on the sign-in page: `expired` after a 401. */
  ended: "expired" | "signed-out" | null;
}

const KEY = "gateway.console.session";
const OPERATOR_KEY = "gateway.console.operator";

function read(): Session {
  let token: string | null = null;
  let userId: string | null = null;
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) ?? "null") as { token?: unknown; userId?: unknown } | null;
    if (typeof saved?.token === "string") token = saved.token;
    if (typeof saved?.userId === "string") userId = saved.userId;
  } catch {
    // A corrupt entry is the same as none.
  }
  return { token, userId, operatorToken: sessionStorage.getItem(OPERATOR_KEY), ended: null };
}

let current: Session = read();
const listeners = new Set<() => void>();

function set(next: Session): void {
  current = next;
  for (const l of listeners) l();
}

window.addEventListener("storage", (e) => {
  // Only localStorage changes reach other tabs; the operator token (sessionStorage) is this tab's alone.
  if (e.storageArea === localStorage && (e.key === KEY || e.key === null)) set({ ...read(), ended: current.ended });
});

/** The current session (for code outside React: the API client). */
export function getSession(): Session {
  return current;
}

/** Starts a customer session with the token of a login or registration. */
export function startSession(token: string, userId: string): void {
  localStorage.setItem(KEY, JSON.stringify({ token, userId }));
  set({ ...current, token, userId, ended: null });
}

/** Prefix of the localStorage entries holding the playground's API key, one per account (pages/playground/key.ts). */
export const PLAYGROUND_KEY_PREFIX = "gateway.console.playground-key.";

/**
 * Ends the customer session: `signed-out` by the user, `expired` when the gateway refused the token (401).
 * Signing out also forgets the playground keys kept in this browser (the keys themselves stay active on the
 * account until revoked on the Keys page): on a shared computer nothing usable should stay behind.
 */
export function endSession(reason: "expired" | "signed-out"): void {
  localStorage.removeItem(KEY);
  if (reason === "signed-out") {
    for (const name of Object.keys(localStorage)) if (name.startsWith(PLAYGROUND_KEY_PREFIX)) localStorage.removeItem(name);
  }
  set({ ...current, token: null, userId: null, ended: reason });
}

/** Sets (a string) or forgets (null) the operator token used by the operator pages. */
export function setOperatorToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(OPERATOR_KEY);
  else sessionStorage.setItem(OPERATOR_KEY, token);
  set({ ...current, operatorToken: token });
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The session as React state: components re-render when it changes. */
export function useSession(): Session {
  return useSyncExternalStore(subscribe, getSession);
}
