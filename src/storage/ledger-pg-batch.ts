/**
 * Group commit for the PostgreSQL ledger (issue 14): holds, captures and releases made outside a
 * transaction are queued, and one statement (one round trip, one commit) serves every call queued
 * while the previous statement was in flight, for any number of accounts.
 *
 * Why: each single statement of storage/ledger-pg.ts locks its account's row until its own commit, so
 * one busy account served at most one ledger write per commit (about 450 paid calls/s), and every call
 * paid a socket round trip of its own. A batch locks each account once for all of its calls.
 *
 * Two lanes, each with at most one statement in flight: holds, and settlements (captures and
 * releases). A call waits for the end of the current event-loop turn (`setImmediate`, so the other
 * requests of this turn join it) or for the lane's statement in flight; then the lane takes up to
 * {@link LEDGER_BATCH_MAX} queued calls. A lone call runs the single statement of storage/ledger-pg.ts.
 *
 * Each call's result is the one it would get alone in queue order (the money invariants of design.md):
 * - holds of one account are applied in queue order; the longest prefix whose running sum the balance
 *   covers is placed; the next one does not fit after the holds placed before it, so it is refused, and
 *   so is every following one larger than what remains, up to the first one that would fit: that one and
 *   the rest of the account's holds go back to the front of the queue for the next statement (their
 *   outcome depends on which of them are placed, which a window sum cannot say). Each statement decides
 *   at least one hold per account, so requeued holds always finish;
 * - a capture or release of a hold that is not open (or a capture above the hold) fails for that call
 *   only; two settlements of the same hold never share a statement (the second waits for the next one).
 * - ledger entries are inserted in account and queue order, so their `seq` order is the order of the
 *   balances they carry (D17), and the sum of an account's entries stays its balance.
 * A batch statement that fails (a constraint, a lost connection) commits nothing: its calls then run one
 * by one with the single statements, each getting its own result or error. No call is answered before
 * the statement that wrote it returned, that is committed.
 *
 * Deadlocks: a batch locks its accounts in id order (`for update` in a materialized CTE) before
 * updating them, and a settlement batch locks its holds before its accounts, as the single statements
 * do; two batches (of this or another process) that share accounts therefore queue, they never wait on
 * each other in a cycle.
 */
import { type Kysely, sql } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import { type PgHoldArgs, pgCaptureHold, pgPlaceHold, pgReleaseHold, type PgUsageEnd, type PgUsageRow } from "./ledger-pg.ts";

import type { Database } from "./schema.ts";

/** At most this many calls share one batch statement. */
export const LEDGER_BATCH_MAX = 100;


/** The outcome of a hold: placed (balance after it), or refused (the balance it did not fit, null without account). */
export type PgHoldOutcome = { placed: true; balance: number } | { placed: false; balance: number | null };

/** A capture of `final` micro-USD, or with `final` null a release of the whole hold. */
export interface PgSettleArgs {
  holdId: string;
  final: number | null;
  now: number;
  usage: PgUsageEnd | null;
}

/** The balance after a settlement and the entries it wrote, or null when the hold was not open (nothing written). */
export type PgSettleOutcome = { balance: number; entries: { kind: string; amount: number }[] } | null;

interface Call<A, R> {
  args: A;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

/** Counts of a batcher's work (tests and benchmarks read them). */
export interface LedgerBatchStats {
  /** Statements run by the lanes (batch statements, single statements and fallbacks). */
  statements: number;
  /** Batch statements of two calls or more. */
  batches: number;
  /** Calls served by batch statements. */
  batchedCalls: number;
  /** Holds sent back to the queue by a batch (their outcome depended on holds before them). */
  requeued: number;
  /** Batch statements that failed and whose calls ran one by one. */
  fallbacks: number;
}

/**
 * One queue with at most one statement in flight. `run` serves a batch (of one call or more) and
 * returns the calls to put back at the front of the queue; it settles every other call itself.
 */
class Lane<A, R> {
  readonly #queue: Call<A, R>[] = [];
  #active = false;
  readonly #run: (calls: Call<A, R>[]) => Promise<Call<A, R>[]>;
  readonly #take: (queue: Call<A, R>[]) => Call<A, R>[];

  constructor(run: (calls: Call<A, R>[]) => Promise<Call<A, R>[]>, take: (queue: Call<A, R>[]) => Call<A, R>[]) {
    this.#run = run;
    this.#take = take;
  }

  push(args: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ args, resolve, reject });
      if (!this.#active) {
        this.#active = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  /** Runs statements until the queue is empty; calls queued meanwhile wait for the one in flight. */
  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const calls = this.#take(this.#queue);
        let again: Call<A, R>[];
        try {
          again = await this.#run(calls);
        } catch (err) {
          // `run` settles its calls; this is a bug guard so that no caller waits forever.
          for (const c of calls) c.reject(err);
          again = [];
        }
        this.#queue.unshift(...again);
      }
    } finally {
      this.#active = false;
    }
  }
}

/** The first {@link LEDGER_BATCH_MAX} calls of the queue, removed from it. */
function takeFirst<A, R>(queue: Call<A, R>[]): Call<A, R>[] {
  return queue.splice(0, LEDGER_BATCH_MAX);
}

/**
 * Up to {@link LEDGER_BATCH_MAX} calls of the queue, removed from it, at most one per hold: a second
 * settlement of a hold stays queued (in place) for the next statement, where it sees the first one's
 * outcome, as it would alone.
 */
function takeDistinctHolds<R>(queue: Call<PgSettleArgs, R>[]): Call<PgSettleArgs, R>[] {
  const taken: Call<PgSettleArgs, R>[] = [];
  const seen = new Set<string>();
  let kept = 0;
  for (const c of queue) {
    if (taken.length < LEDGER_BATCH_MAX && !seen.has(c.args.holdId)) {
      seen.add(c.args.holdId);
      taken.push(c);
    } else {
      queue[kept++] = c;
    }
  }
  queue.length = kept;
  return taken;
}

/** Runs `fn` and hands its result or error to the call. */
async function settle<A, R>(call: Call<A, R>, fn: () => Promise<R>): Promise<void> {
  try {
    call.resolve(await fn());
  } catch (err) {
    call.reject(err);
  }
}

/** The queues of one database (one Kysely instance). */
export class PgLedgerBatcher {
  readonly #db: Kysely<Database>;
  readonly stats: LedgerBatchStats = { statements: 0, batches: 0, batchedCalls: 0, requeued: 0, fallbacks: 0 };
  readonly #holds: Lane<PgHoldArgs, PgHoldOutcome>;
  readonly #settlements: Lane<PgSettleArgs, PgSettleOutcome>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
    this.#holds = new Lane((calls) => this.#runHolds(calls), takeFirst);
    this.#settlements = new Lane((calls) => this.#runSettlements(calls), takeDistinctHolds);
  }

  /** Queues a hold (see {@link pgPlaceHold}). */
  placeHold(args: PgHoldArgs): Promise<PgHoldOutcome> {
    return this.#holds.push(args);
  }

  /** Queues a capture (`final` micro-USD) or, with `final` null, a release (see {@link pgCaptureHold}, {@link pgReleaseHold}). */
  settle(args: PgSettleArgs): Promise<PgSettleOutcome> {
    return this.#settlements.push(args);
  }

  async #singleHold(a: PgHoldArgs): Promise<PgHoldOutcome> {
    this.stats.statements++;
    const balance = await pgPlaceHold(this.#db, a);
    if (balance !== null) return { placed: true, balance };
    const acc = await this.#db.selectFrom("accounts").select("balance_micros").where("id", "=", a.accountId).executeTakeFirst();
    return { placed: false, balance: acc ? Number(acc.balance_micros) : null };
  }

  async #singleSettle(a: PgSettleArgs): Promise<PgSettleOutcome> {
    this.stats.statements++;
    if (a.final !== null) return pgCaptureHold(this.#db, { holdId: a.holdId, final: a.final, now: a.now, usage: a.usage });
    const released = await pgReleaseHold(this.#db, { holdId: a.holdId, now: a.now, usage: a.usage });
    return released && { balance: released.balance, entries: [{ kind: "hold_release", amount: released.amount }] };
  }

  /** Serves `calls` with one statement; on a failure of that statement, one by one. */
  async #runHolds(calls: Call<PgHoldArgs, PgHoldOutcome>[]): Promise<Call<PgHoldArgs, PgHoldOutcome>[]> {
    const [first] = calls;
    if (calls.length === 1 && first) {
      await settle(first, () => this.#singleHold(first.args));
      return [];
    }
    let rows: HoldRow[];
    try {
      this.stats.statements++;
      rows = await batchHolds(this.#db, calls.map((c) => c.args));
    } catch {
      // Nothing of the statement committed: each call gets its own statement and its own error.
      this.stats.fallbacks++;
      for (const c of calls) await settle(c, () => this.#singleHold(c.args));
      return [];
    }
    this.stats.batches++;
    const byOrd = new Map(rows.map((r) => [Number(r.ord), r]));
    const again: Call<PgHoldArgs, PgHoldOutcome>[] = [];
    calls.forEach((c, i) => {
      const r = byOrd.get(i + 1);
      if (!r) c.resolve({ placed: false, balance: null }); // no such account
      else if (r.placed) c.resolve({ placed: true, balance: Number(r.balance) });
      else if (r.refused) c.resolve({ placed: false, balance: Number(r.balance) });
      else again.push(c);
    });
    this.stats.batchedCalls += calls.length - again.length;
    this.stats.requeued += again.length;
    return again;
  }

  async #runSettlements(calls: Call<PgSettleArgs, PgSettleOutcome>[]): Promise<Call<PgSettleArgs, PgSettleOutcome>[]> {
    const [first] = calls;
    if (calls.length === 1 && first) {
      await settle(first, () => this.#singleSettle(first.args));
      return [];
    }
    let rows: SettleRow[];
    try {
      this.stats.statements++;
      rows = await batchSettlements(this.#db, calls.map((c) => c.args));
    } catch {
      this.stats.fallbacks++;
      for (const c of calls) await settle(c, () => this.#singleSettle(c.args));
      return [];
    }
    this.stats.batches++;
    this.stats.batchedCalls += calls.length;
    const byOrd = new Map(rows.map((r) => [Number(r.ord), r]));
    calls.forEach((c, i) => {
      const r = byOrd.get(i + 1);
      if (!r) return c.resolve(null);
      const amount = Number(r.amount_micros);
      const final = c.args.final;
      const entries = [{ kind: "hold_release", amount }];
      if (final !== null && final > 0) entries.push({ kind: "charge", amount: -final });
      c.resolve({ balance: Number(r.balance), entries });
    });
    return [];
  }
}

const batchers = new WeakMap<Kysely<Database>, PgLedgerBatcher>();

/** The batcher of `db` (one per Kysely instance, made on first use). */
export function pgLedgerBatcher(db: Kysely<Database>): PgLedgerBatcher {
  let b = batchers.get(db);
  if (!b) {
    b = new PgLedgerBatcher(db);
    batchers.set(db, b);
  }
  return b;
}

/** One row per placed or refused hold (`ord` is 1-based in the batch); a hold without row is requeued or has no account. */
interface HoldRow {
  ord: string | number;
  placed: boolean;
  refused: boolean;
  /** Placed: the balance right after the hold. Refused: the balance left after the holds placed before it. */
  balance: string | number;
}

/**
 * Places a batch of holds in one statement (see the file comment for which are placed, refused or
 * requeued). The inputs travel as one array per column (`unnest`), so the statement text is the same for
 * every batch size.
 */
async function batchHolds(db: Kysely<Database>, calls: PgHoldArgs[]): Promise<HoldRow[]> {
  const col = <T>(f: (a: PgHoldArgs) => T): T[] => calls.map(f);
  const u = <T>(f: (r: PgUsageRow) => T): (T | null)[] => calls.map((a) => (a.usage ? f(a.usage) : null));
  const res = await sql<HoldRow>`
    with inp as materialized (
      select * from unnest(
        ${col((a) => a.holdId)}::text[], ${col((a) => a.accountId)}::text[], ${col((a) => a.amount)}::bigint[],
        ${col((a) => a.jobId)}::text[], ${col((a) => a.requestId)}::text[], ${col((a) => a.reference)}::text[],
        ${col((a) => a.now)}::bigint[], ${col(() => newTimeOrderedId("le"))}::text[],
        ${u((r) => r.id)}::text[], ${u((r) => r.account_id)}::text[], ${u((r) => r.key_id)}::text[], ${u((r) => r.mode)}::text[],
        ${u((r) => r.model)}::text[], ${u((r) => r.kind)}::text[], ${u((r) => r.status)}::text[], ${u((r) => r.job_id)}::text[],
        ${u((r) => r.hold_micros)}::bigint[], ${u((r) => r.characters)}::bigint[], ${u((r) => r.duration_ms)}::bigint[],
        ${u((r) => r.images)}::bigint[], ${u((r) => r.input_tokens)}::bigint[], ${u((r) => r.output_tokens)}::bigint[],
        ${u((r) => r.cached_tokens)}::bigint[], ${u((r) => r.minutes)}::bigint[], ${u((r) => r.created_at)}::bigint[]
      ) with ordinality as t(hold_id, account_id, amount, job_id, request_id, reference, now, entry_id,
        u_id, u_account_id, u_key_id, u_mode, u_model, u_kind, u_status, u_job_id, u_hold_micros, u_characters,
        u_duration_ms, u_images, u_input_tokens, u_output_tokens, u_cached_tokens, u_minutes, u_created_at, ord)
    ), lk as materialized (
      -- every account of the batch, locked in id order (no deadlock between batches), at its latest balance
      select id, balance_micros from accounts where id in (select account_id from inp) order by id for update
    ), ranked as materialized (
      -- upto: the account's holds of the batch up to this one, in queue order
      select inp.*, lk.balance_micros as bal, sum(inp.amount) over (partition by inp.account_id order by inp.ord) as upto
      from inp join lk on lk.id = inp.account_id
    ), fit as materialized (
      -- placed: the prefix the balance covers (amounts are > 0); rem: the balance left after it
      select ranked.*, ranked.upto <= ranked.bal as placed,
        ranked.bal - coalesce(sum(ranked.amount) filter (where ranked.upto <= ranked.bal) over (partition by ranked.account_id), 0) as rem
      from ranked
    ), decided as materialized (
      -- refused: after the prefix, every hold larger than rem until the first one that fits rem (it and
      -- the rest are requeued: whether they fit depends on which of them are placed)
      select fit.*, not fit.placed
        and not bool_or(not fit.placed and fit.amount <= fit.rem) over (partition by fit.account_id order by fit.ord) as refused
      from fit
    ), acc as (
      update accounts set balance_micros = accounts.balance_micros - t.total
      from (select account_id, sum(amount) as total from decided where placed group by account_id) t
      where accounts.id = t.account_id
    ), h as (
      insert into holds (id, account_id, amount_micros, status, captured_micros, job_id, request_id, reference, created_at, settled_at)
      select hold_id, account_id, amount, 'open', null, job_id, request_id, reference, now, null from decided where placed
    ), u as (
      insert into usage_records (id, account_id, key_id, mode, model, kind, status, job_id, hold_micros, cost_micros,
        characters, duration_ms, images, input_tokens, output_tokens, cached_tokens, minutes, fallback_layer, latency_ms, created_at, updated_at)
      select u_id, u_account_id, u_key_id, u_mode, u_model, u_kind, u_status, u_job_id, u_hold_micros, null,
        u_characters, u_duration_ms, u_images, u_input_tokens, u_output_tokens, u_cached_tokens, u_minutes, 0, null, u_created_at, u_created_at
      from decided where placed and u_id is not null
    ), le as (
      -- seq is drawn in this order (volatile defaults are computed after the sort): by account, in queue order
      insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at)
      select entry_id, account_id, 'hold', -amount, bal - upto, hold_id, job_id, request_id, reference, now
      from decided where placed order by account_id, ord
    )
    select ord, placed, refused, case when placed then bal - upto else rem end as balance from decided`.execute(db);
  return res.rows;
}

/** One row per settled hold (`ord` is 1-based in the batch); a call without row found its hold not open. */
interface SettleRow {
  ord: string | number;
  /** The amount the hold held. */
  amount_micros: string | number;
  /** The balance right after this settlement. */
  balance: string | number;
}

/**
 * Captures and releases a batch of distinct holds in one statement: the holds first (as the single
 * statements lock them), then their accounts in id order; each settled hold writes `hold_release` (+held)
 * and, for a capture above 0, `charge` (-final), carrying the balance right after each.
 */
async function batchSettlements(db: Kysely<Database>, calls: PgSettleArgs[]): Promise<SettleRow[]> {
  const col = <T>(f: (a: PgSettleArgs) => T): T[] => calls.map(f);
  const u = <T>(f: (e: PgUsageEnd) => T): (T | null)[] => calls.map((a) => (a.usage ? f(a.usage) : null));
  const res = await sql<SettleRow>`
    with inp as materialized (
      select * from unnest(
        ${col((a) => a.holdId)}::text[], ${col((a) => a.final)}::bigint[], ${col((a) => a.now)}::bigint[],
        ${col(() => newTimeOrderedId("le"))}::text[], ${col(() => newTimeOrderedId("le"))}::text[],
        ${u(() => true)}::boolean[], ${u((e) => e.status)}::text[], ${u((e) => e.cost)}::bigint[],
        ${u((e) => e.units.characters)}::bigint[], ${u((e) => e.units.duration_ms)}::bigint[], ${u((e) => e.units.images)}::bigint[],
        ${u((e) => e.units.input_tokens)}::bigint[], ${u((e) => e.units.output_tokens)}::bigint[],
        ${u((e) => e.units.cached_tokens)}::bigint[], ${u((e) => e.units.minutes)}::bigint[], ${u((e) => e.fallbackLayer)}::integer[]
      ) with ordinality as t(hold_id, final, now, release_id, charge_id, u_on, u_status, u_cost, u_characters, u_duration_ms,
        u_images, u_input_tokens, u_output_tokens, u_cached_tokens, u_minutes, u_fallback_layer, ord)
    ), h as (
      -- final null: a release; a capture needs final <= held
      update holds set status = case when inp.final is null then 'released' else 'captured' end,
        captured_micros = inp.final, settled_at = inp.now
      from inp
      where holds.id = inp.hold_id and holds.status = 'open' and (inp.final is null or holds.amount_micros >= inp.final)
      returning inp.ord, holds.id as hold_id, holds.account_id, holds.amount_micros, holds.job_id, holds.request_id, holds.reference,
        holds.key_id, holds.key_period_start
    ), lk as materialized (
      select id, balance_micros from accounts where id in (select account_id from h) order by id for update
    ), d as materialized (
      -- delta: what the settlement gives back; upto: the account's deltas of the batch up to this one
      select h.*, inp.final, inp.now, inp.release_id, inp.charge_id, inp.u_on, inp.u_status, inp.u_cost, inp.u_characters,
        inp.u_duration_ms, inp.u_images, inp.u_input_tokens, inp.u_output_tokens, inp.u_cached_tokens, inp.u_minutes,
        inp.u_fallback_layer, lk.balance_micros as bal,
        h.amount_micros - coalesce(inp.final, 0) as delta,
        sum(h.amount_micros - coalesce(inp.final, 0)) over (partition by h.account_id order by h.ord) as upto
      from h join inp on inp.ord = h.ord join lk on lk.id = h.account_id
    ), acc as (
      update accounts set balance_micros = accounts.balance_micros + t.total
      from (select account_id, sum(delta) as total from d group by account_id) t
      where accounts.id = t.account_id
    ), k as (
      -- D34: what each settled hold gives back returns to the key counter it was counted in (keys after accounts)
      update api_keys set spent_micros = api_keys.spent_micros - t.total
      from (select key_id, key_period_start, sum(delta) as total from d where key_id is not null group by key_id, key_period_start) t
      where api_keys.id = t.key_id and api_keys.spent_period_start = t.key_period_start
    ), u as (
      update usage_records set status = d.u_status, cost_micros = d.u_cost,
        characters = coalesce(d.u_characters, usage_records.characters),
        duration_ms = coalesce(d.u_duration_ms, usage_records.duration_ms),
        images = coalesce(d.u_images, usage_records.images),
        input_tokens = coalesce(d.u_input_tokens, usage_records.input_tokens),
        output_tokens = coalesce(d.u_output_tokens, usage_records.output_tokens),
        cached_tokens = coalesce(d.u_cached_tokens, usage_records.cached_tokens),
        minutes = coalesce(d.u_minutes, usage_records.minutes),
        fallback_layer = coalesce(d.u_fallback_layer, usage_records.fallback_layer),
        latency_ms = d.now - usage_records.created_at, updated_at = d.now
      from d where usage_records.id = d.request_id and d.u_on
    ), le as (
      -- before this settlement the balance was bal + upto - delta; seq is drawn by account, queue order, release first
      insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, request_id, reference, created_at)
      select id, account_id, kind, amount, balance_after, hold_id, job_id, request_id, reference, now from (
        select release_id as id, account_id, 'hold_release' as kind, amount_micros as amount,
          bal + upto - delta + amount_micros as balance_after, hold_id, job_id, request_id, reference, now, ord, 0 as sub
        from d
        union all
        select charge_id, account_id, 'charge', -final, bal + upto, hold_id, job_id, request_id, reference, now, ord, 1
        from d where final > 0
      ) e order by account_id, ord, sub
    )
    select ord, amount_micros, bal + upto as balance from d`.execute(db);
  return res.rows;
}
