/**
 * The playground's own API key. The generation endpoints take an API key, not the session token
 * (src/http/app.ts, the keyed group), so the playground creates a key of its own (`POST /v1/auth/keys`,
 * name "Console playground", mode live or test, D32) and keeps its secret in this browser's localStorage,
 * one entry per user and organization (a key acts for its own organization only, D41: the scope
 * `<user id>.<org id>`, {@link playgroundScope}): the only secret the console keeps besides the session
 * token, and the page says so.
 * The key is an ordinary key: it is listed on the Keys page and revoking it there stops the playground.
 */
import { useSyncExternalStore } from "react";
import { api, unwrap } from "../../api.ts";
import { PLAYGROUND_KEY_PREFIX } from "../../session.ts";

/** The name the playground gives its key (shown on the Keys page). */
export const PLAYGROUND_KEY_NAME = "Console playground";

/** What the browser keeps of the playground key. */
export interface PlaygroundKey {
  /** The key's id (`GET /v1/auth/keys` lists it while the key is active). */
  keyId: string;
  /** The secret (`gw_...` or `gw_test_...`), sent as `Authorization: Bearer`. */
  secret: string;
  /** `live` calls move money, `test` calls are simulated and move none (D32). */
  mode: "live" | "test";
}

const PREFIX = PLAYGROUND_KEY_PREFIX;
const listeners = new Set<() => void>();
/** The last value read per scope, so useSyncExternalStore gets a stable snapshot. */
const cache = new Map<string, { raw: string | null; key: PlaygroundKey | null }>();

function parse(raw: string | null): PlaygroundKey | null {
  if (raw === null) return null;
  try {
    const v = JSON.parse(raw) as Partial<PlaygroundKey> | null;
    if (typeof v?.keyId === "string" && typeof v.secret === "string" && (v.mode === "live" || v.mode === "test"))
      return { keyId: v.keyId, secret: v.secret, mode: v.mode };
  } catch {
    // A corrupt entry is the same as none.
  }
  return null;
}

/** The scope of the playground key of user `userId` in organization `orgId`: one key each. */
export function playgroundScope(userId: string, orgId: string): string {
  return `${userId}.${orgId}`;
}

/** The playground key of `scope` ({@link playgroundScope}) kept in this browser, or null. */
export function readPlaygroundKey(scope: string): PlaygroundKey | null {
  const raw = localStorage.getItem(PREFIX + scope);
  const hit = cache.get(scope);
  if (hit && hit.raw === raw) return hit.key;
  const key = parse(raw);
  cache.set(scope, { raw, key });
  return key;
}

function notify(): void {
  for (const l of listeners) l();
}

/** Keeps (a key) or forgets (null) the playground key of `scope` in this browser. */
export function savePlaygroundKey(scope: string, key: PlaygroundKey | null): void {
  if (key === null) localStorage.removeItem(PREFIX + scope);
  else localStorage.setItem(PREFIX + scope, JSON.stringify(key));
  notify();
}

window.addEventListener("storage", (e) => {
  if (e.key === null || e.key.startsWith(PREFIX)) notify();
});

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The playground key of `scope` as React state (null when there is none or no scope). */
export function usePlaygroundKey(scope: string | null): PlaygroundKey | null {
  return useSyncExternalStore(subscribe, () => (scope ? readPlaygroundKey(scope) : null));
}

/**
 * Creates the playground key with the session (`POST /v1/auth/keys`, in the selected organization) and
 * keeps it for `scope`. Throws GatewayError (D1) when the gateway refuses.
 */
export async function createPlaygroundKey(scope: string, mode: PlaygroundKey["mode"]): Promise<PlaygroundKey> {
  const created = await unwrap(api.POST("/v1/auth/keys", { body: { name: PLAYGROUND_KEY_NAME, mode } }));
  const key: PlaygroundKey = { keyId: created.key_id, secret: created.api_key, mode: created.mode };
  savePlaygroundKey(scope, key);
  return key;
}

/** The `Authorization` header of a call made with the playground key. */
export function keyHeaders(key: PlaygroundKey): { authorization: string } {
  return { authorization: `Bearer ${key.secret}` };
}
