/**
 * undici, loaded on the first outbound HTTP call rather than at boot: a gateway on the built-in simulator
 * that never fetches a URL does not pay the library's memory (several MB of idle RSS). Both users,
 * `safe-fetch.ts` and the protocol adapters' HTTP base, take it from here.
 */
import { createRequire } from "node:module";
import type * as Undici from "undici";

let undici: typeof Undici | null = null;

/** The undici module (its CommonJS build), required once on first use. */
export function loadUndici(): typeof Undici {
  undici ??= createRequire(import.meta.url)("undici") as typeof Undici;
  return undici;
}
