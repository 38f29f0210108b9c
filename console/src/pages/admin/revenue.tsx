/**
 * Operator: revenue against upstream cost (`GET /v1/admin/revenue`, docs/operator-api.md): a chart of
 * revenue and known upstream cost per day (days in the browser's time zone), and a table per model with
 * the margin and the revenue that has no cost figure. The period (`from`, `to`: dates, `to` included)
 * is kept in the URL; by default the last 30 days.
 */
import { useQuery } from "@tanstack/react-query";
import { api, type paths } from "../../api.ts";
import { BarChart } from "../../components/BarChart.tsx";
import { type Column, DataTable } from "../../components/DataTable.tsx";
import { ErrorNotice, Loading } from "../../components/states.tsx";
import { useUrlFilters } from "../../components/url-state.ts";
import { Usd } from "../../components/values.tsx";
import { browserTimeZone, formatCount, formatUsd, isoDateDaysAgo, plural } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { operatorHeaders, operatorUnwrap } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/revenue", title: "Revenue", group: "operator", order: 20 };

type Revenue = paths["/v1/admin/revenue"]["get"]["responses"][200]["content"]["application/json"];
type Row = Revenue["data"][number];

/** Longest period whose empty days are filled in on the chart (a longer one shows only days with calls). */
const MAX_FILLED_DAYS = 400;

/** Every `YYYY-MM-DD` from `from` to `to` included, or null when the period is not two dates or too long. */
function daysBetween(from: string, to: string): string[] | null {
  const re = /^\d{4}-\d{2}-\d{2}$/;
  if (!re.test(from) || !re.test(to)) return null;
  const days: string[] = [];
  // Calendar dates, not instants: UTC midnight arithmetic never meets a DST gap.
  for (let d = new Date(`${from}T00:00:00Z`); d <= new Date(`${to}T00:00:00Z`); d.setUTCDate(d.getUTCDate() + 1)) {
    days.push(d.toISOString().slice(0, 10));
    if (days.length > MAX_FILLED_DAYS) return null;
  }
  return days;
}

const margin = (r: Row) => (r.margin_usd === null ? "—" : <Usd amount={r.margin_usd} />);

const MODEL_COLUMNS: Column<Row>[] = [
  { header: "Model", cell: (r) => r.model ?? "—" },
  { header: "Calls", cell: (r) => formatCount(r.requests), numeric: true },
  { header: "Revenue", cell: (r) => <Usd amount={r.revenue_usd} />, numeric: true },
  { header: "Upstream cost", cell: (r) => <Usd amount={r.upstream_cost_usd} />, numeric: true },
  { header: "Margin", cell: margin, numeric: true },
  { header: "Uncosted revenue", cell: (r) => <Usd amount={r.uncosted_revenue_usd} />, numeric: true },
];

function useRevenue(groupBy: "day" | "model", from: string, to: string) {
  const query = { group_by: groupBy, from, to, tz: browserTimeZone() };
  return useQuery({
    queryKey: ["admin-revenue", query],
    queryFn: () => operatorUnwrap(api.GET("/v1/admin/revenue", { params: { query }, headers: operatorHeaders() })),
  });
}

function ByDay({ from, to }: { from: string; to: string }) {
  const byDay = useRevenue("day", from, to);
  if (byDay.isError) return <ErrorNotice error={byDay.error} retry={() => void byDay.refetch()} />;
  if (byDay.isPending) return <Loading label="Loading revenue by day…" />;
  const rows = byDay.data.data;
  if (rows.length === 0) return <p className="empty">No paid calls in this period.</p>;
  const days = daysBetween(from, to) ?? rows.map((r) => r.day ?? "");
  const at = (day: string) => rows.find((r) => r.day === day);
  return (
    <BarChart
      label="Revenue and upstream cost by day"
      categoryLabel="Day"
      categories={days}
      format={formatUsd}
      series={[
        { label: "Revenue", values: days.map((d) => at(d)?.revenue_usd ?? 0), color: "#1e88e5" },
        { label: "Upstream cost (known)", values: days.map((d) => at(d)?.upstream_cost_usd ?? 0), color: "#ef6c00" },
      ]}
    />
  );
}

function ByModel({ from, to }: { from: string; to: string }) {
  const byModel = useRevenue("model", from, to);
  if (byModel.isError) return <ErrorNotice error={byModel.error} retry={() => void byModel.refetch()} />;
  if (byModel.isPending) return <Loading label="Loading revenue by model…" />;
  const { data, total } = byModel.data;
  return (
    <>
      <div className="grid cards">
        <article aria-labelledby="rev-total">
          <h3 id="rev-total">Revenue</h3>
          <p className="big-number">
            <Usd amount={total.revenue_usd} />
          </p>
          <small>{plural(total.requests, "paid call")}</small>
        </article>
        <article aria-labelledby="rev-cost">
          <h3 id="rev-cost">Upstream cost</h3>
          <p className="big-number">
            <Usd amount={total.upstream_cost_usd} />
          </p>
          <small>
            Margin {margin(total)} on the calls with a cost figure
          </small>
        </article>
        <article aria-labelledby="rev-uncosted">
          <h3 id="rev-uncosted">Uncosted revenue</h3>
          <p className="big-number">
            <Usd amount={total.uncosted_revenue_usd} />
          </p>
          <small>Calls with no cost figure (simulator, music, chat…), left out of the margin</small>
        </article>
      </div>
      {data.length === 0 ? (
        <p className="empty">No paid calls in this period.</p>
      ) : (
        <DataTable columns={MODEL_COLUMNS} rows={data} rowKey={(r) => r.model ?? ""} caption="Revenue and cost by model" />
      )}
    </>
  );
}

export default function RevenuePage() {
  const [filters, setFilters] = useUrlFilters({ from: isoDateDaysAgo(29), to: isoDateDaysAgo(0) });
  const reversed = filters.from > filters.to;
  return (
    <>
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="revenue-from">From</label>
          <input id="revenue-from" type="date" required value={filters.from} onChange={(e) => e.target.value && setFilters({ from: e.target.value })} />
        </div>
        <div>
          <label htmlFor="revenue-to">To (included)</label>
          <input id="revenue-to" type="date" required value={filters.to} onChange={(e) => e.target.value && setFilters({ to: e.target.value })} />
        </div>
      </form>
      <p>
        <small>Days in {browserTimeZone()}. Live calls only: test-mode keys move no money.</small>
      </p>
      {reversed ? (
        <p role="alert" className="notice error">
          The start of the period is after its end.
        </p>
      ) : (
        <>
          <section aria-labelledby="rev-day-title">
            <h2 id="rev-day-title">By day</h2>
            <ByDay from={filters.from} to={filters.to} />
          </section>
          <section aria-labelledby="rev-model-title">
            <h2 id="rev-model-title">By model</h2>
            <ByModel from={filters.from} to={filters.to} />
          </section>
        </>
      )}
    </>
  );
}
