/**
 * Claiming pending jobs for a runner (docs/architecture.md "job dispatch"). On PostgreSQL candidates are locked with
 * `FOR UPDATE SKIP LOCKED` (several workers never wait on, or take, the same rows) and the owners' account
 * rows are locked before their running jobs are counted, so a per-account concurrency cap holds across
 * workers. On SQLite the claim runs in one `BEGIN IMMEDIATE` transaction, which serializes claimers.
 * A submit may also start its job at once on its own process's runner (jobs.ts): it counts the running
 * jobs under the same account row lock.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { isPostgres } from "./dialect.ts";
import { type Param, prepare } from "./prepared.ts";
import type { AccountsTable, Database, JobsTable } from "./schema.ts";

/** A claimed job, as the runner needs it. */
export type ClaimedJob = Pick<
  JobsTable,
  "id" | "account_id" | "kind" | "model" | "hold_id" | "hold_micros" | "request_json" | "started_at" | "upstream_handle_json"
> & { fallback_layer: number; mode: "live" | "test"; webhook_url: string | null; traceparent: string | null };

const CLAIM_COLUMNS = [
  "id",
  "account_id",
  "kind",
  "model",
  "hold_id",
  "hold_micros",
  "request_json",
  "started_at",
  "upstream_handle_json",
  "fallback_layer",
  "mode",
  "webhook_url",
  "traceparent",
] as const;

/** Concurrency caps of an account: per kind, or one combined pool (tier 4). */
export interface ConcurrencyCaps {
  image: number;
  video: number;
  /** When set, image and video share this cap. */
  combined: number | null;
}

/** The account columns an account's limits derive from (accounts/limits.ts `limitsOf`). */
export type AccountLimitsRow = Pick<AccountsTable, "total_deposits_micros" | "tier_override" | "limits_override">;

/** An account's caps from its limits columns (a pure function: the claim reads the columns itself). */
export type CapsOf = (account: AccountLimitsRow) => ConcurrencyCaps;

/** What {@link claimJobs} may take besides pending jobs. */
export interface ClaimOptions {
  /** A job on a real source whose runner has not heartbeat it for this long has lost its lease, ms (D28). */
  leaseMs?: number;
  /**
   * Look for such lapsed jobs too (default true). The runner asks on its timer only: a lease lapses after
   * tens of seconds, so looking on every submit's nudge would be a wasted query.
   */
  takeOver?: boolean;
  /**
   * The id of this process's store of withheld texts (D46 zero retention, jobs/texts.ts): a pending job
   * written without its texts is claimed only by the runner of the process that holds them (its
   * `texts_holder`), unless an upstream already accepted it (a handle: resumed by polling, no text needed).
   */
  textsHolder?: string | null;
}

/**
 * Claims up to `limit` jobs for `workerId`: first (with `takeOver`) jobs on real sources whose lease
 * lapsed (`processing`, with an upstream handle, no heartbeat for `leaseMs`: their runner died; D28),
 * which the new runner resumes by polling; then pending jobs, oldest first, whose owner is below its
 * concurrency cap (a job written without its texts only when this process holds them: `textsHolder`,
 * D46). Marks them `processing` by `workerId`. Returns the claimed jobs, and the owners whose pending jobs
 * were left because they are at their cap (the runner claims again when one of their jobs ends).
 *
 * One transaction of four statements whatever the number of jobs and accounts: the candidates (ids,
 * owners and kinds only), the owners' limits columns (locked `FOR UPDATE` on PostgreSQL), their running
 * jobs, and one `UPDATE ... RETURNING` of the chosen jobs. On PostgreSQL the running jobs are counted by a
 * statement after the account rows are locked, so its snapshot sees every claim and direct start
 * (jobs.ts) that committed before: the cap holds across processes.
 */
export async function claimJobs(
  db: Kysely<Database>,
  workerId: string,
  limit: number,
  capsOf: CapsOf,
  opts: ClaimOptions = {},
): Promise<ClaimResult> {
  const pg = isPostgres(db);
  const taken = opts.takeOver === false ? [] : await takeOverLapsed(db, workerId, limit, opts.leaseMs ?? DEFAULT_LEASE_MS);
  if (taken.length >= limit) return { jobs: taken, capped: [] };
  limit -= taken.length;
  const capped = new Set<string>();
  const fresh = await db.transaction().execute(async (trx) => {
    let q = trx
      .selectFrom("jobs")
      .select(["id", "account_id", "kind"])
      .where("status", "=", "pending")
      .where("kind", "in", ["image", "video"])
      .where((eb) => eb.or([eb("not_before", "is", null), eb("not_before", "<=", Date.now())]))
      .where((eb) =>
        eb.or([
          eb("texts_holder", "is", null),
          eb("upstream_handle_json", "is not", null),
          ...(opts.textsHolder ? [eb("texts_holder", "=", opts.textsHolder)] : []),
        ]),
      )
      .orderBy("created_at")
      .orderBy("id")
      // More than `limit`: some owners may be at their cap, and the jobs behind them must not starve.
      .limit(Math.max(limit * 4, 50));
    if (pg) q = q.forUpdate().skipLocked();
    const candidates = await q.execute();
    if (candidates.length === 0) return [];
    const accounts = [...new Set(candidates.map((c) => c.account_id))].sort();
    // Serializes claimers and submits per account on PostgreSQL (sorted to avoid deadlocks between workers).
    let owners = trx
      .selectFrom("accounts")
      .select(["id", "total_deposits_micros", "tier_override", "limits_override"])
      .where("id", "in", accounts)
      .orderBy("id");
    if (pg) owners = owners.forUpdate();
    const caps = new Map<string, ConcurrencyCaps>();
    for (const a of await owners.execute()) caps.set(a.id, capsOf(a));
    const rows = await trx
      .selectFrom("jobs")
      .select(["account_id", "kind", (eb) => eb.fn.countAll<number>().as("n")])
      .where("status", "=", "processing")
      .where("account_id", "in", accounts)
      .groupBy(["account_id", "kind"])
      .execute();
    const running = new Map<string, { image: number; video: number }>();
    for (const a of accounts) running.set(a, { image: 0, video: 0 });
    for (const r of rows) {
      const entry = running.get(r.account_id);
      if (entry && (r.kind === "image" || r.kind === "video")) entry[r.kind] = Number(r.n);
    }
    const chosen: string[] = [];
    for (const c of candidates) {
      if (chosen.length >= limit) break;
      const kind = c.kind as "image" | "video";
      const r = running.get(c.account_id)!;
      const cap = caps.get(c.account_id);
      if (!cap) continue; // the account is gone
      const free = cap.combined !== null ? r.image + r.video < cap.combined : r[kind] < cap[kind];
      if (!free) {
        capped.add(c.account_id);
        continue;
      }
      r[kind]++;
      chosen.push(c.id);
    }
    if (chosen.length === 0) return [];
    const now = Date.now();
    const claimed = await trx
      .updateTable("jobs")
      .set({ status: "processing", worker_id: workerId, started_at: now, heartbeat_at: now, updated_at: now, not_before: null, progress: null })
      .where("id", "in", chosen)
      .where("status", "=", "pending")
      .returning(CLAIM_COLUMNS)
      .execute();
    // In the queue's order (RETURNING's order is unspecified): the oldest job starts first.
    const order = new Map(chosen.map((id, i) => [id, i]));
    return claimed
      .map((c) => ({ ...c, fallback_layer: Number(c.fallback_layer), webhook_url: c.webhook_url ?? null, traceparent: c.traceparent ?? null }))
      .sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  });
  return { jobs: [...taken, ...fresh], capped: [...capped] };
}

/** What {@link claimJobs} claimed, and which owners' pending jobs it left because they are at their cap. */
export interface ClaimResult {
  jobs: ClaimedJob[];
  /** Accounts whose pending jobs wait for one of their running jobs to end (not for a free runner). */
  capped: string[];
}

/** D28 `JOB_LEASE_S` default: a runner that has not heartbeat a job for 30 s has lost its lease. */
export const DEFAULT_LEASE_MS = 30_000;

/**
 * Takes over up to `limit` jobs with an upstream handle whose lease lapsed. Each takeover is a
 * compare-and-set on the heartbeat it saw, so two runners never take the same job.
 */
async function takeOverLapsed(db: Kysely<Database>, workerId: string, limit: number, leaseMs: number): Promise<ClaimedJob[]> {
  const now = Date.now();
  const lapsed = await db
    .selectFrom("jobs")
    .select([...CLAIM_COLUMNS, "heartbeat_at"])
    .where("status", "=", "processing")
    .where("kind", "in", ["image", "video"])
    .where("heartbeat_at", "<", now - leaseMs)
    .where("upstream_handle_json", "is not", null)
    .orderBy("heartbeat_at")
    .limit(limit)
    .execute();
  const out: ClaimedJob[] = [];
  for (const j of lapsed) {
    if (j.heartbeat_at === null) continue;
    const res = await db
      .updateTable("jobs")
      .set({ worker_id: workerId, heartbeat_at: now, updated_at: now })
      .where("id", "=", j.id)
      .where("status", "=", "processing")
      .where("heartbeat_at", "=", j.heartbeat_at)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) {
      const { heartbeat_at: _seen, ...job } = j;
      out.push({ ...job, fallback_layer: Number(job.fallback_layer), webhook_url: job.webhook_url ?? null, traceparent: job.traceparent ?? null });
    }
  }
  return out;
}

/**
 * Puts job `id`, claimed by `workerId`, back in its queue until `notBefore` (ms since epoch): every source
 * of its family is at `max_concurrency` (D28). The upstream handle and layer stay. False when the job is
 * no longer this worker's.
 */
export async function deferJob(db: Kysely<Database>, id: string, workerId: string, notBefore: number): Promise<boolean> {
  const res = await db
    .updateTable("jobs")
    .set({ status: "pending", worker_id: null, started_at: null, heartbeat_at: null, not_before: notBefore, progress: null, updated_at: Date.now() })
    .where("id", "=", id)
    .where("status", "=", "processing")
    .where("worker_id", "=", workerId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** A job a submit inserts (jobs.ts): the row's values that vary. */
export interface NewJob {
  id: string;
  account_id: string;
  api_key_id: string | null;
  kind: "image" | "video";
  model: string;
  hold_id: string | null;
  hold_micros: number;
  mode: "live" | "test";
  request_json: string;
  request_hash: string;
  idempotency_key: string | null;
  duration_sec: number | null;
  webhook_url: string | null;
  /** The submit's W3C `traceparent` (D40), or null when it was not traced. */
  traceparent: string | null;
  /** created_at and updated_at; also started_at and heartbeat_at when it starts at once. */
  now: number;
}

/** The account's concurrency and queue caps for the new job's pool, and whether it may start at once. */
export interface SubmitCaps {
  /** image and video share the caps (tier 4), or only jobs of the new job's kind count. */
  pool: "combined" | "kind";
  concurrent: number;
  queue: number;
  /** The runner `workerId` that would run the job at once (it holds a place for it), or null. */
  startOn: string | null;
}

/** What {@link insertJobWithinCaps} found and did. */
export interface SubmitOutcome {
  /** False when the pool's queue was full: nothing was inserted. */
  inserted: boolean;
  /** Whether the job was inserted `processing` by `startOn`. */
  started: boolean;
  /** The account's active jobs of the pool before this one, running ones among them, pending ones started before it. */
  active: number;
  running: number;
  ahead: number;
}

/**
 * Inserts a submitted job in the transaction `trx` that holds its account's lock (the hold's update), within
 * its pool's caps: refused (nothing inserted) when the pool's active jobs fill its concurrency and queue;
 * inserted `processing` by `caps.startOn` when that runner has a place, the pool is below its concurrency
 * cap and none of the account's jobs of the pool waits (they start first); else `pending`. `ahead` counts
 * the pending jobs of the pool the runner starts before it (the order of {@link claimJobs}: created_at,
 * then id), for its queue_position. On PostgreSQL the counts and the insert are one statement (one round
 * trip under the account's lock); its snapshot is taken after the hold's statement got the lock, so it
 * sees every job of the account committed before. On SQLite, a count and an insert.
 */
export async function insertJobWithinCaps(trx: Transaction<Database>, job: NewJob, caps: SubmitCaps): Promise<SubmitOutcome> {
  const total = caps.concurrent + caps.queue;
  if (isPostgres(trx)) {
    const stmt = caps.pool === "combined" ? pgSubmit.combined : pgSubmit.kind;
    const row = (
      await stmt(
        trx,
        job.account_id,
        job.now,
        job.id,
        job.kind,
        caps.concurrent,
        total,
        caps.startOn !== null,
        caps.startOn,
        job.api_key_id,
        job.model,
        job.hold_id,
        job.hold_micros,
        job.mode,
        job.request_json,
        job.request_hash,
        job.idempotency_key,
        job.duration_sec,
        job.webhook_url,
        job.traceparent,
      )
    ).rows[0];
    return {
      inserted: row.status !== null,
      started: row.status === "processing",
      active: Number(row.n),
      running: Number(row.running ?? 0),
      ahead: Number(row.ahead ?? 0),
    };
  }
  const counts = (
    caps.pool === "combined" ? await poolCounts.combined(trx, job.account_id, job.now, job.id) : await poolCounts.kind(trx, job.account_id, job.now, job.id, job.kind)
  ).rows[0];
  const active = Number(counts.n);
  const running = Number(counts.running ?? 0);
  const ahead = Number(counts.ahead ?? 0);
  if (active >= total) return { inserted: false, started: false, active, running, ahead };
  const started = caps.startOn !== null && running < caps.concurrent && active === running;
  await insertJob(
    trx,
    job.id,
    job.account_id,
    job.api_key_id,
    job.kind,
    job.model,
    started ? "processing" : "pending",
    job.hold_id,
    job.hold_micros,
    job.mode,
    job.request_json,
    job.request_hash,
    job.idempotency_key,
    job.duration_sec,
    job.now,
    started ? job.now : null,
    started ? caps.startOn : null,
    job.webhook_url,
    job.traceparent,
  );
  return { inserted: true, started, active, running, ahead };
}

/** Statuses that occupy a concurrency slot or a queue place. */
const ACTIVE = ["pending", "processing"] as const;

/**
 * The account's active jobs of a pool: all (`n`), running, and pending ones started before the new job
 * (`ahead`). Parameters: account, now, job id, and the kind for `kind`.
 */
function countsOf(db: Kysely<Database>, p: Param, pool: "combined" | "kind") {
  const q = db
    .selectFrom("jobs")
    .select((eb) => [
      eb.fn.countAll<number>().as("n"),
      // sum() over no rows is null, hence the coalesce.
      eb.fn.coalesce(eb.fn.sum<number>(eb.case().when("status", "=", "processing").then(1).else(0).end()), eb.lit(0)).as("running"),
      eb.fn
        .coalesce(
          eb.fn.sum<number>(
            eb
              .case()
              .when(
                eb.and([
                  eb("status", "=", "pending"),
                  eb.or([eb("created_at", "<", p<number>(1)), eb.and([eb("created_at", "=", p<number>(1)), eb("id", "<", p<string>(2))])]),
                ]),
              )
              .then(1)
              .else(0)
              .end(),
          ),
          eb.lit(0),
        )
        .as("ahead"),
    ])
    .where("account_id", "=", p<string>(0))
    .where("status", "in", [...ACTIVE]);
  return pool === "combined" ? q.where("kind", "in", ["image", "video"]) : q.where("kind", "=", p<"image" | "video">(3));
}

const poolCounts = {
  combined: prepare((db, p) => countsOf(db, p, "combined")),
  kind: prepare((db, p) => countsOf(db, p, "kind")),
};

/** A new job row; a job started at once has its start, first heartbeat and runner (parameters 14, 15). */
const insertJob = prepare((db, p) =>
  db.insertInto("jobs").values({
    id: p<string>(0),
    account_id: p<string>(1),
    api_key_id: p<string | null>(2),
    kind: p<"image" | "video">(3),
    model: p<string>(4),
    status: p<"pending" | "processing">(5),
    hold_id: p<string | null>(6),
    hold_micros: p<number>(7),
    mode: p<"live" | "test">(8),
    cost_micros: null,
    request_json: p<string>(9),
    request_hash: p<string>(10),
    idempotency_key: p<string | null>(11),
    output_json: null,
    duration_sec: p<number | null>(12),
    error_code: null,
    error_message: null,
    created_at: p<number>(13),
    updated_at: p<number>(13),
    started_at: p<number | null>(14),
    heartbeat_at: p<number | null>(14),
    worker_id: p<string | null>(15),
    webhook_url: p<string | null>(16),
    traceparent: p<string | null>(17),
  }),
);

/**
 * PostgreSQL: the counts and the insert of {@link insertJobWithinCaps} in one statement (a data-modifying
 * CTE). Parameters: 0 account, 1 now, 2 job id, 3 kind, 4 concurrency cap, 5 concurrency + queue cap,
 * 6 may start, 7 runner, 8 key, 9 model, 10 hold, 11 hold amount, 12 mode, 13 request, 14 request hash,
 * 15 idempotency key, 16 duration, 17 webhook URL, 18 traceparent. Answers the counts and the inserted job's status (null
 * when refused).
 */
const pgSubmit = (() => {
  const build = (db: Kysely<Database>, p: Param, pool: "combined" | "kind") => {
    const start = sql<boolean>`(${p<boolean>(6)}::boolean and c.running < ${p<number>(4)}::bigint and c.n = c.running)`;
    return db
      .with("c", () => countsOf(db, p, pool))
      .with("ins", (qb) =>
        qb
          .insertInto("jobs")
          .columns([
            "id",
            "account_id",
            "api_key_id",
            "kind",
            "model",
            "status",
            "hold_id",
            "hold_micros",
            "mode",
            "request_json",
            "request_hash",
            "idempotency_key",
            "duration_sec",
            "created_at",
            "updated_at",
            "started_at",
            "heartbeat_at",
            "worker_id",
            "webhook_url",
            "traceparent",
          ])
          .expression(
            qb
              .selectFrom("c")
              .select([
                sql<string>`${p<string>(2)}::text`.as("id"),
                sql<string>`${p<string>(0)}::text`.as("account_id"),
                sql<string | null>`${p<string | null>(8)}::text`.as("api_key_id"),
                sql<string>`${p<string>(3)}::text`.as("kind"),
                sql<string>`${p<string>(9)}::text`.as("model"),
                sql<string>`case when ${start} then 'processing' else 'pending' end`.as("status"),
                sql<string | null>`${p<string | null>(10)}::text`.as("hold_id"),
                sql<number>`${p<number>(11)}::bigint`.as("hold_micros"),
                sql<string>`${p<string>(12)}::text`.as("mode"),
                sql<string>`${p<string>(13)}::text`.as("request_json"),
                sql<string>`${p<string>(14)}::text`.as("request_hash"),
                sql<string | null>`${p<string | null>(15)}::text`.as("idempotency_key"),
                sql<number | null>`${p<number | null>(16)}::double precision`.as("duration_sec"),
                sql<number>`${p<number>(1)}::bigint`.as("created_at"),
                sql<number>`${p<number>(1)}::bigint`.as("updated_at"),
                sql<number | null>`case when ${start} then ${p<number>(1)}::bigint end`.as("started_at"),
                sql<number | null>`case when ${start} then ${p<number>(1)}::bigint end`.as("heartbeat_at"),
                sql<string | null>`case when ${start} then ${p<string | null>(7)}::text end`.as("worker_id"),
                sql<string | null>`${p<string | null>(17)}::text`.as("webhook_url"),
                sql<string | null>`${p<string | null>(18)}::text`.as("traceparent"),
              ])
              .where(sql<boolean>`c.n < ${p<number>(5)}::bigint`),
          )
          .returning("status"),
      )
      .selectFrom("c")
      .select(["c.n", "c.running", "c.ahead", (eb) => eb.selectFrom("ins").select("ins.status").$asScalar().as("status")]);
  };
  return {
    combined: prepare((db, p) => build(db, p, "combined")),
    kind: prepare((db, p) => build(db, p, "kind")),
  };
})();
