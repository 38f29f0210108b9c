/**
 * The retention sweep (D46): applies the operator's windows (config.ts `RetentionWindows`) and the shorter
 * ones organizations chose (accounts/retention.ts) to what the gateway keeps:
 * - **prompts**: an ended job older than its organization's prompts window loses its texts: `request_json`
 *   keeps everything but the prompt and the strings of its free-form `parameters` (request.ts
 *   `withoutJobTexts`; a stored speech, music or sound-effect call loses its `text`, `prompt`, `lyrics`,
 *   contracts/texts.ts), `dialect_json` its echo's strings, and the job's rendered webhook events their
 *   `prompt` and `input`; `texts_cleared_at` records it. Usage records, idempotency records and realtime
 *   sessions hold no text (counts, hashes, ids), so nothing else has any;
 * - **outputs**: a job older than its organization's outputs window has its files deleted from the blob store,
 *   then its `output_json` nulled and `output_expired_at` set: the job shows `output: null`, leaves the
 *   gallery, and its file URLs and share page answer 410 `output_expired`;
 * - **usage**: usage records older than `RETENTION_USAGE_DAYS` are deleted;
 * - **audit**: audit-log entries older than `RETENTION_AUDIT_DAYS` are deleted (skipped while the database has
 *   no `audit_log` table).
 * Ledger entries and holds are never read, changed or deleted here, so the balance still equals the ledger.
 *
 * Work goes in pages of {@link RETENTION_BATCH} rows (one read and one transaction per page; usage and audit
 * deletions one statement per page) until a page comes back short. Each write is conditional on the state
 * it read and blob deletes are idempotent, so several processes may sweep at once (every runner does, on its
 * timer: jobs/runner.ts); a job whose files could not be deleted is left for the next pass.
 */
import type { Kysely } from "kysely";
import type { RetentionWindows } from "../config.ts";
import { inTransaction } from "../billing/ledger.ts";
import { deleteUsageBefore } from "../billing/usage.repository.ts";
import { orgsWithOwnWindows } from "../accounts/retention.repository.ts";
import { TEXT_FIELDS, withoutStrings, withoutTexts } from "../contracts/texts.ts";
import { type BlobStore, isValidBlobKey } from "../storage/blob-store.ts";
import type { Database } from "../storage/schema.ts";
import { renderedEventsOfJobs, replaceEventData } from "../webhooks/event-data.repository.ts";
import { dialectJsonWithoutTexts } from "./dialect-facts.ts";
import type { JobOutput } from "./outputs.ts";
import { decodeJobRequest, encodeJobRequest, withoutJobTexts } from "./request.ts";
import {
  clearJobTexts,
  deleteAuditBefore,
  type JobWithTexts,
  jobsWithOutputs,
  jobsWithTexts,
  markOutputsExpired,
  type PageCursor,
} from "./retention.repository.ts";

/** Rows one page reads, updates or deletes at most. */
export const RETENTION_BATCH = 500;

const DAY_MS = 24 * 3600 * 1000;

/** What a sweep needs. */
export interface RetentionSweepDeps {
  db: Kysely<Database>;
  blobs: BlobStore;
  /** The operator's windows. */
  windows: RetentionWindows;
  log?: { warn(obj: object, msg?: string): void };
}

/** What one sweep did: jobs whose texts it cleared and whose outputs it deleted, records and entries it deleted. */
export interface RetentionSweepResult {
  promptsCleared: number;
  outputsExpired: number;
  usageDeleted: number;
  /** Null when the database has no audit log. */
  auditDeleted: number | null;
}

/**
 * One sweep at `now` (epoch ms; tests pass a later time instead of waiting days), in pages of `batch` rows:
 * the operator's windows over every organization, then each organization's shorter ones over its own jobs.
 */
export async function sweepRetention(deps: RetentionSweepDeps, now = Date.now(), batch = RETENTION_BATCH): Promise<RetentionSweepResult> {
  const { db, windows } = deps;
  const own = await orgsWithOwnWindows(db);
  let promptsCleared = await clearTexts(deps, { before: now - windows.promptsDays * DAY_MS, accountId: null }, now, batch);
  let outputsExpired = await expireOutputs(deps, { before: now - windows.outputsDays * DAY_MS, accountId: null }, now, batch);
  for (const o of own) {
    if (o.promptsDays !== null && o.promptsDays < windows.promptsDays) {
      promptsCleared += await clearTexts(deps, { before: now - o.promptsDays * DAY_MS, accountId: o.id }, now, batch);
    }
    if (o.outputsDays !== null && o.outputsDays < windows.outputsDays) {
      outputsExpired += await expireOutputs(deps, { before: now - o.outputsDays * DAY_MS, accountId: o.id }, now, batch);
    }
  }
  let usageDeleted = 0;
  for (const mode of ["live", "test"] as const) {
    for (;;) {
      const n = await deleteUsageBefore(db, mode, now - windows.usageDays * DAY_MS, batch);
      usageDeleted += n;
      if (n < batch) break;
    }
  }
  let auditDeleted: number | null = 0;
  for (;;) {
    const n = await deleteAuditBefore(db, now - windows.auditDays * DAY_MS, batch);
    if (n === null) {
      auditDeleted = null;
      break;
    }
    auditDeleted += n;
    if (n < batch) break;
  }
  return { promptsCleared, outputsExpired, usageDeleted, auditDeleted };
}

/** Clears the texts of the ended jobs created before `scope.before` (of `scope.accountId`, or all); returns how many. */
async function clearTexts(deps: RetentionSweepDeps, scope: { before: number; accountId: string | null }, now: number, batch: number): Promise<number> {
  let cleared = 0;
  let after: PageCursor = null;
  for (;;) {
    const rows = await jobsWithTexts(deps.db, { ...scope, after, limit: batch });
    if (rows.length === 0) break;
    cleared += await inTransaction(deps.db, async (trx) => {
      let n = 0;
      const done: string[] = [];
      for (const r of rows) {
        if (await clearJobTexts(trx, r.id, { requestJson: requestWithoutTexts(r), dialectJson: dialectJsonWithoutTexts(r.dialect_json), now })) {
          n++;
          done.push(r.id);
        }
      }
      for (const e of await renderedEventsOfJobs(trx, done)) await replaceEventData(trx, e.id, eventDataWithoutTexts(e.dataJson));
      return n;
    });
    const last = rows[rows.length - 1];
    after = { createdAt: last.created_at, id: last.id };
    if (rows.length < batch) break;
  }
  return cleared;
}

/**
 * A job's `request_json` without its texts: an image or video request through request.ts, a stored audio
 * call's request through contracts/texts.ts; text that is not a request keeps only the model.
 */
function requestWithoutTexts(r: JobWithTexts): string {
  try {
    if (r.kind === "image" || r.kind === "video") return encodeJobRequest(withoutJobTexts(decodeJobRequest(r.request_json)));
    const value: unknown = JSON.parse(r.request_json);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return JSON.stringify(withoutTexts(value));
  } catch {
    // Not a request this code wrote: nothing of it is kept but the model.
  }
  return JSON.stringify({ model: r.model });
}

/**
 * An event's rendered data without the request's texts: the job object's `prompt` becomes null, a
 * prediction's `input` loses its strings (each top-level text field: a string becomes null, an object or a
 * list loses its strings). Data that is not a JSON object becomes `{}`.
 */
export function eventDataWithoutTexts(dataJson: string): string {
  try {
    const value: unknown = JSON.parse(dataJson);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      return JSON.stringify(Object.fromEntries(Object.entries(value).map(([k, v]) => [k, !TEXT_FIELDS.has(k) ? v : typeof v === "string" ? null : withoutStrings(v)])));
    }
  } catch {
    // Not JSON: nothing of it can be kept.
  }
  return "{}";
}

/** Deletes the files of the jobs created before `scope.before` (of `scope.accountId`, or all) and marks them expired; returns how many jobs. */
async function expireOutputs(deps: RetentionSweepDeps, scope: { before: number; accountId: string | null }, now: number, batch: number): Promise<number> {
  let expired = 0;
  let after: PageCursor = null;
  for (;;) {
    const rows = await jobsWithOutputs(deps.db, { ...scope, after, limit: batch });
    if (rows.length === 0) break;
    // Files first: a job is marked expired only once its files are gone (a failed delete is tried again by
    // the next pass). One request for the page; when it fails, job by job, so one file the store refuses
    // holds back its own job only.
    let gone: string[] = rows.map((r) => r.id);
    try {
      await deps.blobs.deleteMany(rows.flatMap((r) => keysOf(r.output_json)));
    } catch {
      gone = [];
      for (const r of rows) {
        try {
          await deps.blobs.deleteMany(keysOf(r.output_json));
          gone.push(r.id);
        } catch (err) {
          deps.log?.warn({ err: err instanceof Error ? err.message : String(err), job: r.id }, "retention: an expired output could not be deleted; the next sweep tries again");
        }
      }
    }
    expired += await markOutputsExpired(deps.db, gone, now);
    const last = rows[rows.length - 1];
    after = { createdAt: last.created_at, id: last.id };
    if (rows.length < batch) break;
  }
  return expired;
}

/** The blob keys of a job's stored output (`output_json`), none when it does not parse; a key no store accepts is left out (nothing was stored under it). */
function keysOf(outputJson: string): string[] {
  try {
    const o = JSON.parse(outputJson) as Partial<JobOutput>;
    const keys: unknown[] = Array.isArray(o.keys) && o.keys.length > 0 ? o.keys : typeof o.key === "string" ? [o.key] : [];
    return keys.filter((k): k is string => typeof k === "string" && isValidBlobKey(k));
  } catch {
    return [];
  }
}
