/**
 * Model lifecycle (D35): whether a catalog model is deprecated and the day it shuts down, and the 410
 * `model_retired` of a model whose shutdown day has come.
 *
 * - `deprecated`: the spec's legacy models (Versioning 3: `imgB-1.1-ultra`, `imgA-v3`), and any model the
 *   operator gave a shutdown date.
 * - `shutdown_date`: `YYYY-MM-DD` (UTC) or null. The built-in catalog has none; the operator sets them with
 *   `MODEL_SHUTDOWN_DATES` (src/config.ts), checked against the catalog when the services start
 *   (`configureModelLifecycle`, models.ts). From 00:00 UTC of that day the model is retired: every request
 *   naming it (or an alias resolving to it) answers 410 `model_retired` before any hold; it stays listed in
 *   `GET /v1/models` and `GET /v1/pricing` with its date, and work accepted before the day runs to its end.
 *
 * The dates are one table per process (a process serves one configuration), set once at start by
 * `createServices`; until then no model has a date. This module holds the table and reads no catalog, so the
 * catalog's resolvers (`getModelOf`, the text side's `prepare`) can call {@link checkNotRetired}.
 */
import { errors } from "../errors.ts";

/** Model id -> shutdown day (`YYYY-MM-DD`, UTC). */
let shutdownDates: ReadonlyMap<string, string> = new Map();

/** The lifecycle fields of `GET /v1/models` entries and `GET /v1/pricing` media rows (D35). */
export interface LifecycleFields {
  deprecated: boolean;
  /** `YYYY-MM-DD` (UTC), or null when no shutdown is scheduled. */
  shutdown_date: string | null;
}

/**
 * Replaces the table of shutdown dates (concrete model ids, already checked against the catalog by
 * `configureModelLifecycle`). Called once per process at start; tests call it to set and clear dates.
 */
export function setShutdownDates(dates: Readonly<Record<string, string>>): void {
  shutdownDates = new Map(Object.entries(dates));
}

/** The shutdown day of model `id` (a concrete id, not an alias), or null. */
export function shutdownDateOf(id: string): string | null {
  return shutdownDates.get(id) ?? null;
}

/** Today in UTC as `YYYY-MM-DD`, at `now` (ms since the epoch). */
function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

/** Whether model `id` is retired at `now`: its shutdown day has come (00:00 UTC of that day or later). */
export function isRetired(id: string, now: number = Date.now()): boolean {
  const date = shutdownDates.get(id);
  return date !== undefined && utcDay(now) >= date;
}

/**
 * Throws the 410 `model_retired` (D35) when model `id` (a concrete id) is retired at `now`; otherwise
 * returns. Request handlers call it, through the catalog's resolvers, before any limit or hold.
 * @throws AppError 410 `model_retired`.
 */
export function checkNotRetired(id: string, now: number = Date.now()): void {
  const date = shutdownDates.get(id);
  if (date !== undefined && utcDay(now) >= date) throw errors.modelRetired(id, date);
}

/**
 * The lifecycle fields of a model (D35): `legacy` is the spec's legacy mark (Versioning 3); a model with a
 * shutdown date is deprecated too.
 */
export function lifecycleOf(id: string, legacy: boolean): LifecycleFields {
  const date = shutdownDateOf(id);
  return { deprecated: legacy || date !== null, shutdown_date: date };
}
