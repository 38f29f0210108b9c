/**
 * The account overview: balance, tier and its limits (`GET /v1/auth/me`, `GET /v1/auth/limits`), spend of the
 * last 7 and 30 days by model (`GET /v1/usage?group_by=model`, days in the browser's time zone, D29) and
 * the five most recent jobs (`GET /v1/jobs?limit=5`, D30). The balance card leads to the billing page (top-up,
 * low-balance alert); a return from Stripe Checkout to the gateway's default address (`/console/?topup=...`,
 * D33) shows its notice here.
 */
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, type Schemas, unwrap } from "../api.ts";
import { BarChart } from "../components/BarChart.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { EmptyState, ErrorNotice, Loading, QueryView } from "../components/states.tsx";
import { FirstCall } from "../components/FirstCall.tsx";
import { TopupNotice } from "../components/TopupNotice.tsx";
import { DateTime, Usd } from "../components/values.tsx";
import { usePayments } from "../payments.ts";
import { JobAmount } from "./jobs.tsx";
import { browserTimeZone, formatCount, formatUsdCents, isoDateDaysAgo, plural } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { can } from "../roles.ts";
import { tierJobs } from "../tiers.ts";

export const page: PageMeta = { path: "/", title: "Overview", group: "customer", order: 0, section: "build" };

/** Spend by model since `daysBack - 1` days before today (today included), in the browser's zone. */
function useSpend(days: number) {
  const tz = browserTimeZone();
  const from = isoDateDaysAgo(days - 1);
  return useQuery({
    queryKey: ["usage", { group_by: "model", from, tz }],
    queryFn: () => unwrap(api.GET("/v1/usage", { params: { query: { group_by: "model", from, tz } } })),
  });
}

function Balance() {
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")) });
  const payments = usePayments();
  // Top-ups are the admins' and owners' (D41).
  const mayTopUp = can(me.data?.role, "topUp");
  return (
    <article aria-labelledby="balance-title">
      <h2 id="balance-title">Balance</h2>
      <QueryView query={me}>
        {(m) => (
          <>
            <p className="big-number">
              <Usd amount={m.balance_usd} cents />
            </p>
            <p>
              <small>
                Deposited in total: <Usd amount={m.total_deposits_usd} cents /> · <span className="wrap-anywhere">{m.org_name ?? m.email}</span>
              </small>
            </p>
            <p className="card-actions">
              {payments.state === "on" && mayTopUp && (
                <Link to="/billing" role="button">
                  Top up
                </Link>
              )}
              {payments.state === "off" && mayTopUp && <small>Card top-ups are off on this gateway: the operator adds deposits.</small>}
              <Link to="/ledger">Ledger</Link>
              <Link to="/billing#alert-title">Low-balance alert</Link>
            </p>
          </>
        )}
      </QueryView>
    </article>
  );
}

function Tier() {
  const limits = useQuery({ queryKey: ["limits"], queryFn: () => unwrap(api.GET("/v1/auth/limits")) });
  return (
    <article aria-labelledby="tier-title">
      <h2 id="tier-title">Tier</h2>
      <QueryView query={limits}>
        {(l) => (
          <>
            <p className="big-number">{l.name}</p>
            <dl className="limits">
              <dt>Requests per minute</dt>
              <dd>{formatCount(l.rpm)}</dd>
              <dt>Per model, per minute</dt>
              <dd>{formatCount(l.per_model_rpm)}</dd>
              <dt>Tokens per minute</dt>
              <dd>{formatCount(l.tpm)}</dd>
              <dt>Image jobs at once (queued)</dt>
              <dd>{tierJobs(l, "image")}</dd>
              <dt>Video jobs at once (queued)</dt>
              <dd>{tierJobs(l, "video")}</dd>
              <dt>Audio calls at once</dt>
              <dd>{formatCount(l.audio_concurrent)}</dd>
            </dl>
          </>
        )}
      </QueryView>
    </article>
  );
}

function Spend() {
  const week = useSpend(7);
  const month = useSpend(30);
  const failed = week.isError ? week : month.isError ? month : null;
  if (failed) return <ErrorNotice error={failed.error} retry={() => void failed.refetch()} />;
  if (week.data === undefined || month.data === undefined) return <Loading label="Loading spend…" />;
  // Every model of the 30 days (a superset of the 7), most expensive first.
  const models = [...month.data.data].sort((a, b) => b.cost_usd - a.cost_usd).map((g) => g.group);
  if (models.length === 0)
    return (
      <EmptyState
        title="No paid calls in the last 30 days."
        actions={
          <Link to="/playground" role="button">
            Try the playground
          </Link>
        }
      >
        <p>Your spend by model shows here once you make calls with a live key.</p>
      </EmptyState>
    );
  const cost = (rows: { group: string; cost_usd: number }[]) => models.map((m) => rows.find((r) => r.group === m)?.cost_usd ?? 0);
  return (
    <>
      <p>
        Last 7 days: <Usd amount={week.data.total.cost_usd} cents /> in {plural(week.data.total.requests, "call")} · last 30 days:{" "}
        <Usd amount={month.data.total.cost_usd} cents /> in {plural(month.data.total.requests, "call")}. <Link to="/usage">Usage details</Link>
      </p>
      <BarChart
        label="Spend by model"
        categoryLabel="Model"
        categories={models}
        format={formatUsdCents}
        series={[
          { label: "Last 7 days", values: cost(week.data.data), color: "#1e88e5" },
          { label: "Last 30 days", values: cost(month.data.data), color: "#90caf9" },
        ]}
      />
    </>
  );
}

type Job = Schemas["MediaJob"];

const JOB_COLUMNS: Column<Job>[] = [
  { header: "Created", cell: (j) => <DateTime iso={j.created_at} /> },
  { header: "Model", cell: (j) => j.model },
  { header: "Prompt", cell: (j) => <span className="prompt-cell">{j.prompt ?? "—"}</span> },
  { header: "Status", cell: (j) => <span className={`status status-${j.status}`}>{j.status}</span> },
  { header: "Cost", numeric: true, cell: (j) => <JobAmount job={j} cents /> },
  {
    header: "Job",
    cell: (j) => (
      <Link to={`/jobs/${encodeURIComponent(j.id)}`} aria-label={`Details of ${j.id}`}>
        details
      </Link>
    ),
  },
];

function RecentJobs() {
  const jobs = useQuery({ queryKey: ["jobs", { limit: 5 }], queryFn: () => unwrap(api.GET("/v1/jobs", { params: { query: { limit: "5" } } })) });
  return (
    <QueryView
      query={jobs}
      isEmpty={(d) => d.data.length === 0}
      empty={
        <EmptyState
          after={<FirstCall />}
          title="No image or video jobs yet."
          actions={
            <Link to="/playground/media" role="button">
              Make an image in the playground
            </Link>
          }
        >
        </EmptyState>
      }
    >
      {(d) => (
        <>
          <DataTable columns={JOB_COLUMNS} rows={d.data} rowKey={(j) => j.id} />
          <p>
            <Link to="/jobs">All jobs</Link> · <Link to="/gallery">Gallery</Link>
          </p>
        </>
      )}
    </QueryView>
  );
}

export default function Overview() {
  return (
    <>
      <TopupNotice />
      <div className="grid cards">
        <Balance />
        <Tier />
      </div>
      <section aria-labelledby="spend-title">
        <h2 id="spend-title">Spend by model</h2>
        <Spend />
      </section>
      <section aria-labelledby="jobs-title">
        <h2 id="jobs-title">Recent jobs</h2>
        <RecentJobs />
      </section>
    </>
  );
}
