/**
 * undici, loaded on the first outbound HTTP call rather than at boot: a gateway on the built-in simulator
 * that never fetches a URL does not pay the library's memory (several MB of idle RSS). Both users,
 * `safe-fetch.ts` and the protocol adapters' HTTP base, take it from here; the adapters also take the
 * pool of their calls from here ({@link adapterDispatcher}).
 */
import { createRequire } from "node:module";
import type * as Undici from "undici";
import type { Agent, Dispatcher } from "undici";

/** Longest connect phase of an adapter's call by default, in milliseconds (capped by the total timeout). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** How long an idle keep-alive connection to an upstream is kept open, in milliseconds. */
export const KEEP_ALIVE_TIMEOUT_MS = 30_000;

let undici: typeof Undici | null = null;

/** The undici module (its CommonJS build), required once on first use. */
export function loadUndici(): typeof Undici {
  undici ??= createRequire(import.meta.url)("undici") as typeof Undici;
  return undici;
}

/**
 * The dispatcher of an adapter's HTTP calls: `given` when the configuration has one (tests, a shared
 * pool), else an agent of the adapter's own (keep-alive {@link KEEP_ALIVE_TIMEOUT_MS}, connect timeout
 * `connectTimeoutMs` ms), which is also returned as `ownAgent` for the adapter to close when it is
 * closed (null when `given` was used). An agent opens no connection until used.
 */
export function adapterDispatcher(given: Dispatcher | undefined, connectTimeoutMs: number): { dispatcher: Dispatcher; ownAgent: Agent | null } {
  if (given !== undefined) return { dispatcher: given, ownAgent: null };
  const ownAgent = new (loadUndici().Agent)({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, connectTimeout: connectTimeoutMs });
  return { dispatcher: ownAgent, ownAgent };
}
