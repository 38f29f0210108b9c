/**
 * The SQL of the revenue report (billing/revenue.ts, `GET /v1/admin/revenue`): live usage records of all
 * accounts in a window, each joined to its job by primary key, summed per model (and UTC bucket). How the
 * sums become revenue, cost and margin is revenue.ts's (its module comment says what each basis means).
 */
import type { Expression, SqlBool } from "kysely";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";

/** The sums of one model (and bucket) of live records; amounts in micro-USD. */
export interface RevenueSumRow {
  model: string;
  /** The index of the UTC bucket (of `bucketMs`) since the epoch, or null when not grouped by bucket. */
  bucket: number | null;
  requests: number;
  /** What the calls were charged. */
  revenue: Micros;
  /** Charged by synchronous calls (no job), and how many there were. */
  syncRevenue: Micros;
  syncRequests: number;
  /** Upstream cost reported by the source, and the revenue of those jobs. */
  reportedCost: Micros;
  reportedRevenue: Micros;
  /** Upstream cost at the provider's list price, and the revenue of those jobs. */
  listCost: Micros;
  listRevenue: Micros;
  /** Jobs with an upstream cost recorded. */
  costedJobs: number;
}

/**
 * The live records in `[from, to)` (ms since the epoch) summed by model, and with `bucketMs` also by UTC
 * bucket of that width.
 */
export async function revenueSums(db: Executor, opts: { from: number; to: number; bucketMs: number | null }): Promise<RevenueSumRow[]> {
  const base = db
    .selectFrom("usage_records as u")
    .leftJoin("jobs as j", "j.id", "u.job_id")
    .where("u.mode", "=", "live")
    .where("u.created_at", ">=", opts.from)
    .where("u.created_at", "<", opts.to)
    .select((eb) => {
      const charged = eb.fn.coalesce("u.cost_micros", eb.lit(0));
      const basisIs = (basis: "reported" | "list_price") =>
        basis === "reported"
          ? eb.and([eb("j.upstream_cost_micros", "is not", null), eb("j.upstream_cost_basis", "=", "reported")])
          : // A cost recorded before the basis column (migration 006) was a list price.
            eb.and([eb("j.upstream_cost_micros", "is not", null), eb.or([eb("j.upstream_cost_basis", "=", "list_price"), eb("j.upstream_cost_basis", "is", null)])]);
      const sumWhen = (cond: Expression<SqlBool>, value: Expression<number | null>) =>
        eb.fn.sum<number>(eb.case().when(cond).then(value).else(eb.lit(0)).end());
      return [
        "u.model as model",
        eb.fn.countAll<number>().as("requests"),
        eb.fn.sum<number>(charged).as("revenue"),
        sumWhen(eb("u.job_id", "is", null), charged).as("sync_revenue"),
        eb.fn.sum<number>(eb.case().when("u.job_id", "is", null).then(eb.lit(1)).else(eb.lit(0)).end()).as("sync_requests"),
        sumWhen(basisIs("reported"), eb.ref("j.upstream_cost_micros")).as("reported_cost"),
        sumWhen(basisIs("reported"), charged).as("reported_revenue"),
        sumWhen(basisIs("list_price"), eb.ref("j.upstream_cost_micros")).as("list_cost"),
        sumWhen(basisIs("list_price"), charged).as("list_revenue"),
        eb.fn.sum<number>(eb.case().when("j.upstream_cost_micros", "is not", null).then(eb.lit(1)).else(eb.lit(0)).end()).as("costed_jobs"),
      ];
    });
  const bucketMs = opts.bucketMs;
  const rows = bucketMs !== null
    ? await base
        // A literal divisor: integer division on both databases, and the same expression in GROUP BY.
        .select((eb) => eb(eb.ref("u.created_at"), "/", eb.lit(bucketMs)).as("bucket"))
        .groupBy([(eb) => eb(eb.ref("u.created_at"), "/", eb.lit(bucketMs)), "u.model"])
        .execute()
    : (await base.groupBy("u.model").execute()).map((r) => ({ ...r, bucket: null }));

  const n = (v: number | string | null) => Number(v ?? 0);
  return rows.map((r) => ({
    model: r.model,
    bucket: r.bucket === null ? null : Math.floor(Number(r.bucket)),
    requests: n(r.requests),
    revenue: n(r.revenue),
    syncRevenue: n(r.sync_revenue),
    syncRequests: n(r.sync_requests),
    reportedCost: n(r.reported_cost),
    reportedRevenue: n(r.reported_revenue),
    listCost: n(r.list_cost),
    listRevenue: n(r.list_revenue),
    costedJobs: n(r.costed_jobs),
  }));
}
