/**
 * The batch statements of the PostgreSQL ledger (billing/ledger-pg-batch.ts, issue 14): a batch of holds,
 * and a batch of captures and releases, each one statement. Which calls share a statement, and what each
 * call is answered, is the batcher's; the comments in the SQL say how each statement locks and orders.
 */
import { type Kysely, sql } from "kysely";
import { newTimeOrderedId } from "../ids.ts";
import type { Database } from "../storage/schema.ts";
import { keepUnitsSet, type PgHoldArgs, type PgUsageEnd, type PgUsageRow, rearmAfterCredit, unitColumnList, unitValueList } from "./ledger-pg.repository.ts";

/** A capture of `final` micro-USD, or with `final` null a release of the whole hold. */
export interface PgSettleArgs {
  holdId: string;
  final: number | null;
  now: number;
  usage: PgUsageEnd | null;
}

/** One row per placed or refused hold (`ord` is 1-based in the batch); a hold without row is requeued or has no account. */
export interface HoldRow {
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
export async function batchHolds(db: Kysely<Database>, calls: PgHoldArgs[]): Promise<HoldRow[]> {
  const col = <T>(f: (a: PgHoldArgs) => T): T[] => calls.map(f);
  const u = <T>(f: (r: PgUsageRow) => T): (T | null)[] => calls.map((a) => (a.usage ? f(a.usage) : null));
  const res = await sql<HoldRow>`
    with inp as materialized (
      select * from unnest(
        ${col((a) => a.holdId)}::text[], ${col((a) => a.accountId)}::text[], ${col((a) => a.amount)}::bigint[],
        ${col((a) => a.jobId)}::text[], ${col((a) => a.requestId)}::text[], ${col((a) => a.reference)}::text[],
        ${col((a) => a.now)}::bigint[], ${col(() => newTimeOrderedId("le"))}::text[],
        ${u((r) => r.id)}::text[], ${u((r) => r.account_id)}::text[], ${u((r) => r.user_id)}::text[], ${u((r) => r.key_id)}::text[], ${u((r) => r.mode)}::text[],
        ${u((r) => r.model)}::text[], ${u((r) => r.kind)}::text[], ${u((r) => r.status)}::text[], ${u((r) => r.job_id)}::text[],
        ${u((r) => r.hold_micros)}::bigint[], ${unitValueList((c) => sql`${u((r) => r[c])}::bigint[]`)}, ${u((r) => r.created_at)}::bigint[]
      ) with ordinality as t(hold_id, account_id, amount, job_id, request_id, reference, now, entry_id,
        u_id, u_account_id, u_user_id, u_key_id, u_mode, u_model, u_kind, u_status, u_job_id, u_hold_micros, ${unitColumnList("u_")}, u_created_at, ord)
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
      insert into usage_records (id, account_id, user_id, key_id, mode, model, kind, status, job_id, hold_micros, cost_micros,
        ${unitColumnList()}, fallback_layer, latency_ms, created_at, updated_at)
      select u_id, u_account_id, u_user_id, u_key_id, u_mode, u_model, u_kind, u_status, u_job_id, u_hold_micros, null,
        ${unitColumnList("u_")}, 0, null, u_created_at, u_created_at
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
export interface SettleRow {
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
export async function batchSettlements(db: Kysely<Database>, calls: PgSettleArgs[]): Promise<SettleRow[]> {
  const col = <T>(f: (a: PgSettleArgs) => T): T[] => calls.map(f);
  const u = <T>(f: (e: PgUsageEnd) => T): (T | null)[] => calls.map((a) => (a.usage ? f(a.usage) : null));
  const res = await sql<SettleRow>`
    with inp as materialized (
      select * from unnest(
        ${col((a) => a.holdId)}::text[], ${col((a) => a.final)}::bigint[], ${col((a) => a.now)}::bigint[],
        ${col(() => newTimeOrderedId("le"))}::text[], ${col(() => newTimeOrderedId("le"))}::text[],
        ${u(() => true)}::boolean[], ${u((e) => e.status)}::text[], ${u((e) => e.cost)}::bigint[],
        ${unitValueList((c) => sql`${u((e) => e.units[c])}::bigint[]`)}, ${u((e) => e.fallbackLayer)}::integer[]
      ) with ordinality as t(hold_id, final, now, release_id, charge_id, u_on, u_status, u_cost, ${unitColumnList("u_")}, u_fallback_layer, ord)
    ), h as (
      -- final null: a release; a capture needs final <= held
      update holds set status = case when inp.final is null then 'released' else 'captured' end,
        captured_micros = inp.final, settled_at = inp.now
      from inp
      where holds.id = inp.hold_id and holds.status = 'open' and (inp.final is null or holds.amount_micros >= inp.final)
      returning inp.ord, holds.id as hold_id, holds.account_id, holds.amount_micros, holds.job_id, holds.request_id, holds.reference,
        holds.key_id, holds.key_period_start, holds.budgeted
    ), lk as materialized (
      select id, balance_micros from accounts where id in (select account_id from h) order by id for update
    ), d as materialized (
      -- delta: what the settlement gives back; upto: the account's deltas of the batch up to this one
      select h.*, inp.final, inp.now, inp.release_id, inp.charge_id, inp.u_on, inp.u_status, inp.u_cost, ${unitColumnList("inp.u_")},
        inp.u_fallback_layer, lk.balance_micros as bal,
        h.amount_micros - coalesce(inp.final, 0) as delta,
        sum(h.amount_micros - coalesce(inp.final, 0)) over (partition by h.account_id order by h.ord) as upto
      from h join inp on inp.ord = h.ord join lk on lk.id = h.account_id
    ), acc as (
      -- D34: an account back above its low-balance threshold is armed again in the same statement
      update accounts set balance_micros = accounts.balance_micros + t.total, ${rearmAfterCredit(sql`t.total`)}
      from (select account_id, sum(delta) as total from d group by account_id) t
      where accounts.id = t.account_id
    ), k as (
      -- D34: what each settled hold gives back returns to the key counter it was counted in (keys after accounts)
      update api_keys set spent_micros = api_keys.spent_micros - t.total
      from (select key_id, key_period_start, sum(delta) as total from d where key_id is not null group by key_id, key_period_start) t
      where api_keys.id = t.key_id and api_keys.spent_period_start = t.key_period_start
    ), b as (
      -- D44: and to the budget counters it was counted in, still on the hold's window (budgets after keys)
      update budgets set spent_micros = budgets.spent_micros - t.total
      from (select hb.budget_id, hb.window_start, sum(d.delta) as total from d join hold_budgets hb on hb.hold_id = d.hold_id
        where d.budgeted = 1 group by hb.budget_id, hb.window_start) t
      where budgets.id = t.budget_id and budgets.window_start = t.window_start
    ), u as (
      update usage_records set status = d.u_status, cost_micros = d.u_cost,
        ${keepUnitsSet((c) => sql.raw(`d.u_${c}`), "usage_records.")},
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
