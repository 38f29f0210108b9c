/**
 * Revenue against upstream cost (issue 15 point 3, `GET /v1/admin/revenue`): what live customers were
 * charged, per model and day, next to what the upstreams cost for the same calls.
 *
 * **Revenue** is read from the usage log (D29): the `cost_micros` of every live record, which the ledger
 * wrote in the same transaction (docs/architecture.md invariant 9), so over a period the revenue equals the ledger's
 * charges less its refunds. Test-mode records (D32) move no money and are left out. A call counts on the day
 * (in `tz`) it placed its hold, as in `GET /v1/usage`, and the days come from 15-minute UTC buckets the same
 * way (usage-report.ts).
 *
 * **Upstream cost** is known three ways, each summed separately (`byBasis`):
 * - `reported`: a job whose source said what it charged (BFL's `cost`), from `jobs.upstream_cost_micros`;
 * - `list_price`: a job served by a real source that reports nothing: the provider's list price of what
 *   was delivered, recorded on the job by the runner (catalog/quote.ts `upstreamListPrice`);
 * - `catalog`: a synchronous call. Nothing is recorded for those (no source, no upstream price on the
 *   usage record), so the figure is an estimate from the catalog's provider list price: the charge divided
 *   by the model's catalog markup (D18: `provider_cost x markup` = price), for the models whose catalog row
 *   states a markup (speech per 1000 characters, transcription and understanding per minute: markup 1, so
 *   cost equals revenue). It is the same whichever source served the call, the simulator included.
 * Revenue with no figure (jobs the simulator served or that record no cost, music, sound effects, voice
 * design and cloning, chat: their catalog rows state no provider cost) is `uncostedRevenueMicros`; it is
 * left out of the margin rather than counted as free. `upstreamCostMicros` and `marginMicros` are null
 * when no call of the group has a figure.
 *
 * The scan: usage records of all accounts in `[from, to)` (no index leads with `created_at`: migration 008
 * indexes by account), each joined to its job by primary key.
 */
import { getModel } from "../catalog/models.ts";
import type { Executor } from "./executor.ts";
import { divRoundHalfUp, type Micros } from "../money.ts";
import { revenueSums } from "./revenue.repository.ts";
import { BUCKET_MS, localDateFormatter } from "./usage-report.ts";

/** How `GET /v1/admin/revenue` groups. */
export type RevenueGroupBy = "day" | "model" | "day_model";

/** Upstream cost by how it is known (see the module comment), micro-USD. */
export interface CostByBasis {
  reported: Micros;
  listPrice: Micros;
  catalog: Micros;
}

/** One group of the revenue report; amounts in micro-USD. */
export interface RevenueRow {
  /** `YYYY-MM-DD` in the zone, or null when not grouped by day. */
  day: string | null;
  /** The model id, or null when not grouped by model. */
  model: string | null;
  /** Live paid calls (usage records), whatever their status. */
  requests: number;
  revenueMicros: Micros;
  /** The sum of {@link CostByBasis}, or null when no call of the group has a cost figure. */
  upstreamCostMicros: Micros | null;
  /** Revenue of the calls with a cost figure minus that cost, or null when none has one. */
  marginMicros: Micros | null;
  /** Revenue of the calls without a cost figure (not in the margin). */
  uncostedRevenueMicros: Micros;
  byBasis: CostByBasis;
}

/** The markup of a synchronous model's catalog row in basis points, or null when the row states none. */
function catalogMarkupBp(modelId: string): number | null {
  const p = getModel(modelId)?.pricing;
  if (!p) return null;
  return "markupBp" in p && p.mode !== "per-mp" ? p.markupBp : null;
}

interface Acc {
  requests: number;
  revenue: Micros;
  costed: boolean;
  costedRevenue: Micros;
  byBasis: CostByBasis;
}

const emptyAcc = (): Acc => ({ requests: 0, revenue: 0, costed: false, costedRevenue: 0, byBasis: { reported: 0, listPrice: 0, catalog: 0 } });

function add(into: Acc, from: Acc): void {
  into.requests += from.requests;
  into.revenue += from.revenue;
  into.costed ||= from.costed;
  into.costedRevenue += from.costedRevenue;
  into.byBasis.reported += from.byBasis.reported;
  into.byBasis.listPrice += from.byBasis.listPrice;
  into.byBasis.catalog += from.byBasis.catalog;
}

function rowOf(day: string | null, model: string | null, a: Acc): RevenueRow {
  const cost = a.byBasis.reported + a.byBasis.listPrice + a.byBasis.catalog;
  return {
    day,
    model,
    requests: a.requests,
    revenueMicros: a.revenue,
    upstreamCostMicros: a.costed ? cost : null,
    marginMicros: a.costed ? a.costedRevenue - cost : null,
    uncostedRevenueMicros: a.revenue - a.costedRevenue,
    byBasis: { ...a.byBasis },
  };
}

/**
 * Live revenue and upstream cost in `[from, to)` (ms since the epoch), grouped by day in `tz` (an IANA
 * zone the caller checked), by model, or by both; groups sorted by day, then model. The total covers
 * every group.
 */
export async function revenueReport(
  db: Executor,
  opts: { from: number; to: number; tz: string; groupBy: RevenueGroupBy },
): Promise<{ rows: RevenueRow[]; total: RevenueRow }> {
  const byDay = opts.groupBy !== "model";
  const rows = await revenueSums(db, { from: opts.from, to: opts.to, bucketMs: byDay ? BUCKET_MS : null });

  const dayOf = byDay ? localDateFormatter(opts.tz) : null;
  const groups = new Map<string, { day: string | null; model: string | null; acc: Acc }>();
  const total = emptyAcc();
  for (const r of rows) {
    const markup = catalogMarkupBp(r.model);
    const syncRevenue = r.syncRevenue;
    const catalog = markup === null ? 0 : Number(divRoundHalfUp(BigInt(syncRevenue) * 10_000n, BigInt(markup)));
    const acc: Acc = {
      requests: r.requests,
      revenue: r.revenue,
      costed: r.costedJobs > 0 || (markup !== null && r.syncRequests > 0),
      costedRevenue: r.reportedRevenue + r.listRevenue + (markup === null ? 0 : syncRevenue),
      byBasis: { reported: r.reportedCost, listPrice: r.listCost, catalog },
    };
    const day = dayOf && r.bucket !== null ? dayOf(r.bucket * BUCKET_MS) : null;
    const model = opts.groupBy === "day" ? null : r.model;
    const key = `${day ?? ""}\u0000${model ?? ""}`;
    const g = groups.get(key) ?? { day, model, acc: emptyAcc() };
    add(g.acc, acc);
    groups.set(key, g);
    add(total, acc);
  }
  const cmp = (a: string | null, b: string | null) => ((a ?? "") < (b ?? "") ? -1 : (a ?? "") > (b ?? "") ? 1 : 0);
  const out = [...groups.values()].sort((a, b) => cmp(a.day, b.day) || cmp(a.model, b.model)).map((g) => rowOf(g.day, g.model, g.acc));
  return { rows: out, total: rowOf(null, null, total) };
}
