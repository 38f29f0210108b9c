/**
 * The organization the console acts for (D41): a session acts for the organization named by the
 * `X-Svc-Org` header, else the user's personal one. The console remembers the user's choice in
 * localStorage, one entry per user (`gateway.console.org.<user id>`), so a reload, a new tab or the next
 * sign-in stays on it; api.ts sends it on every call made with the session token. No entry: the
 * gateway's default (the personal organization).
 *
 * A tiny external store like session.ts: React reads it with `useSelectedOrg()`, the API client with
 * `getSelectedOrg()`. Another tab switching changes this one too (a `storage` event).
 */
import { useSyncExternalStore } from "react";
import { getSession, useSession } from "./session.ts";

/** Prefix of the localStorage entries holding each user's selected organization id. */
export const ORG_KEY_PREFIX = "gateway.console.org.";

const listeners = new Set<() => void>();

function notify(): void {
  for (const l of listeners) l();
}

/** The organization id `userId` selected in this browser, or null (the gateway's default). */
export function readSelectedOrg(userId: string | null): string | null {
  if (userId === null) return null;
  const v = localStorage.getItem(ORG_KEY_PREFIX + userId);
  return v !== null && v.startsWith("org_") ? v : null;
}

/** The selected organization of the signed-in user (for code outside React: the API client), or null. */
export function getSelectedOrg(): string | null {
  return readSelectedOrg(getSession().userId);
}

/**
 * Selects `orgId` for the signed-in user (null: back to the gateway's default). The caller resets the
 * query cache (app.tsx does it on every change), so every page reads the new organization's data.
 */
export function selectOrg(orgId: string | null): void {
  const userId = getSession().userId;
  if (userId === null) return;
  if (orgId === null) localStorage.removeItem(ORG_KEY_PREFIX + userId);
  else localStorage.setItem(ORG_KEY_PREFIX + userId, orgId);
  notify();
}

window.addEventListener("storage", (e) => {
  if (e.storageArea === localStorage && (e.key === null || e.key.startsWith(ORG_KEY_PREFIX))) notify();
});

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The signed-in user's selected organization id as React state (null: none chosen, or signed out). */
export function useSelectedOrg(): string | null {
  const { userId } = useSession();
  return useSyncExternalStore(subscribe, () => readSelectedOrg(userId));
}
