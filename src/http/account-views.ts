/**
 * The account views the customer endpoints and the operator API share (D8, D17, D29): a ledger page
 * (`GET /v1/billing/ledger`, `GET /v1/admin/users/{user_id}/ledger`), a page of usage records
 * (`GET /v1/requests`, `.../requests`) and a usage summary (`GET /v1/usage`, `.../usage`), as the API
 * shows them (amounts in USD, times in ISO 8601). Queries are the route schemas' static types.
 */
import type { Static } from "typebox";
import { type Executor, type LedgerEntry, listLedger } from "../billing/ledger.ts";
import { microsToUsd } from "../money.ts";
import { DEFAULT_USAGE_WINDOW_MS, isTimeZone, listRequests, parseTimeBound, summarizeUsage, type UsageRecord } from "../billing/usage-report.ts";
import { errors } from "../errors.ts";
import type { PAGE_QUERY } from "./schemas/common.ts";
import type { REQUESTS_QUERY, SUMMARY_QUERY } from "./schemas/usage.ts";

/** A ledger entry as the API shows it (D8, D17, D29). */
export function ledgerEntryJson(e: LedgerEntry) {
  return {
    id: e.id,
    org_id: e.accountId,
    user_id: e.userId,
    kind: e.kind,
    amount_usd: microsToUsd(e.amountMicros),
    balance_usd: microsToUsd(e.balanceAfterMicros),
    job_id: e.jobId,
    request_id: e.requestId,
    reference: e.reference,
    created_at: new Date(e.createdAt).toISOString(),
  };
}

/**
 * One page of `accountId`'s ledger as `GET /v1/billing/ledger` answers it (also the operator's view of an
 * account, `GET /v1/admin/users/{user_id}/ledger`); `query` as validated by the route schema.
 */
export async function ledgerPage(db: Executor, accountId: string, query: Static<typeof PAGE_QUERY>) {
  const page = await listLedger(db, accountId, {
    limit: query.limit === undefined ? 20 : Number(query.limit),
    after: query.after ?? null,
  });
  return {
    object: "list" as const,
    data: page.entries.map(ledgerEntryJson),
    has_more: page.hasMore,
  };
}

/** A usage record as the API shows it. */
export function recordJson(r: UsageRecord) {
  return {
    id: r.id,
    object: "usage.record",
    org_id: r.accountId,
    user_id: r.userId,
    key_id: r.keyId,
    model: r.model,
    kind: r.kind,
    status: r.status,
    mode: r.mode,
    units: r.units,
    cost_usd: r.costMicros === null ? null : microsToUsd(r.costMicros),
    hold_usd: microsToUsd(r.holdMicros),
    fallback_layer: r.fallbackLayer,
    latency_ms: r.latencyMs,
    job_id: r.jobId,
    created_at: new Date(r.createdAt).toISOString(),
    realtime: r.realtime !== null,
    // D42, D43: a socket's record says how long it was open, its contexts and how it closed.
    ...(r.realtime === null ? {} : { duration_ms: r.realtime.sessionMs, contexts: r.realtime.contexts, close_code: r.realtime.closeCode }),
  };
}

/** The query of `GET /v1/requests`, as validated by its route schema. */
export type RequestsQuery = Static<typeof REQUESTS_QUERY>;

/**
 * One page of `accountId`'s usage records as `GET /v1/requests` answers it (also the operator's view of
 * an account, `GET /v1/admin/users/{user_id}/requests`). @throws AppError 400 `invalid_request` (a bad time).
 */
export async function requestsPage(db: Executor, accountId: string, q: RequestsQuery) {
  const page = await listRequests(db, accountId, {
    limit: q.limit === undefined ? 20 : Number(q.limit),
    after: q.after ?? null,
    model: q.model ?? null,
    keyId: q.key_id ?? null,
    userId: q.user_id ?? null,
    status: q.status ?? null,
    from: q.from === undefined ? null : parseTimeBound(q.from, "UTC", "from"),
    to: q.to === undefined ? null : parseTimeBound(q.to, "UTC", "to"),
    mode: q.mode ?? "live",
  });
  return { object: "list" as const, data: page.records.map(recordJson), has_more: page.hasMore };
}

/**
 * `accountId`'s usage summed as `GET /v1/usage` answers it (also `GET /v1/admin/users/{user_id}/usage`).
 * @throws AppError 400 `invalid_request` (an unknown zone, a bad time, `from` after `to`).
 */
export async function usageSummary(db: Executor, accountId: string, q: SummaryQuery) {
  const opts = summaryOptions(q);
  const out = await summarizeUsage(db, accountId, opts);
  return {
    object: "usage.summary" as const,
    group_by: opts.groupBy,
    data: out.groups.map((g) => ({ group: g.group, requests: g.requests, cost_usd: microsToUsd(g.costMicros), units: g.units })),
    total: { requests: out.total.requests, cost_usd: microsToUsd(out.total.costMicros) },
  };
}

/** The query of `GET /v1/usage` and `GET /v1/usage.csv`, as validated by their route schema. */
export type SummaryQuery = Static<typeof SUMMARY_QUERY>;

/** The window, grouping and zone of a summary query. @throws AppError 400 `invalid_request`. */
export function summaryOptions(q: SummaryQuery) {
  const tz = q.tz ?? "UTC";
  if (!isTimeZone(tz)) throw errors.invalidRequest(`tz must be an IANA time zone such as Europe/Berlin; '${tz}' is not one.`, "tz");
  const now = Date.now();
  const to = q.to === undefined ? now : parseTimeBound(q.to, tz, "to");
  const from = q.from === undefined ? to - DEFAULT_USAGE_WINDOW_MS : parseTimeBound(q.from, tz, "from");
  if (from > to) throw errors.invalidRequest("from must not be after to.", "from");
  return { from, to, tz, groupBy: q.group_by ?? "day", mode: q.mode ?? "live" };
}
