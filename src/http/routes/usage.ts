/**
 * The usage log (D29): `GET /v1/requests` (records, newest first), `GET /v1/requests/{id}` (a record and
 * its ledger entries), `GET /v1/usage` and `GET /v1/usage.csv` (records summed by day in a time zone, by
 * model or by key). API key or session token; an account sees only its own records, test-mode records
 * (D32) only with `mode=test`.
 */
import type { Static } from "typebox";
import type { Executor } from "../../billing/ledger.ts";
import { microsToUsd } from "../../billing/money.ts";
import {
  DEFAULT_USAGE_WINDOW_MS,
  getRequest,
  isTimeZone,
  listRequests,
  parseTimeBound,
  summarizeUsage,
  UNIT_NAMES,
  type UsageRecord,
} from "../../billing/usage-report.ts";
import { errors } from "../../errors.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { principalOf } from "../auth.ts";
import { getRequestSchema, getUsageCsvSchema, getUsageSchema, listRequestsSchema, type REQUESTS_QUERY, type SUMMARY_QUERY } from "../schemas/usage.ts";
import { ledgerEntryJson } from "./billing.ts";

/** A usage record as the API shows it. */
function recordJson(r: UsageRecord) {
  return {
    id: r.id,
    object: "usage.record",
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

/** One CSV field: quoted when it holds a comma, a quote or a line break. */
function csvField(v: string | number): string {
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function usageRoutes(app: App, services: Services): void {
  const db = services.db.kysely;

  app.get("/v1/requests", { schema: listRequestsSchema }, async (req) => requestsPage(db, principalOf(req).accountId, req.query));

  app.get("/v1/requests/:id", { schema: getRequestSchema }, async (req) => {
    const { record, ledger } = await getRequest(db, principalOf(req).accountId, req.params.id);
    return { ...recordJson(record), ledger: ledger.map(ledgerEntryJson) };
  });

  app.get("/v1/usage", { schema: getUsageSchema }, async (req) => usageSummary(db, principalOf(req).accountId, req.query));

  app.get("/v1/usage.csv", { schema: getUsageCsvSchema }, async (req, reply) => {
    const opts = summaryOptions(req.query);
    const out = await summarizeUsage(db, principalOf(req).accountId, opts);
    const lines = [["group", "requests", "cost_usd", ...UNIT_NAMES].join(",")];
    for (const g of out.groups) {
      lines.push([g.group, g.requests, microsToUsd(g.costMicros), ...UNIT_NAMES.map((u) => g.units[u] ?? 0)].map(csvField).join(","));
    }
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="usage-${opts.groupBy}.csv"`)
      .send(`${lines.join("\r\n")}\r\n`);
  });
}
