/**
 * Usage (D29): the request log (`GET /v1/requests`, newest first, cursor paged) filtered by model, key,
 * status, key mode and a date range, all kept in the URL; the totals of the period by model
 * (`GET /v1/usage?group_by=model`, and `group_by=key` for the selected key); and a CSV of the period
 * (`GET /v1/usage.csv`, by model, day, key or member) and its FOCUS 1.2 export (`GET /v1/usage/export`,
 * the chosen days as UTC days), fetched with the session token and saved through a download link.
 *
 * Dates are days in the browser's time zone: the range is sent as the instants of its local midnights
 * (`from` inclusive, `to` the midnight after the last day, exclusive), so the log, the totals and the CSV
 * cover exactly the same time whatever zone each endpoint reads dates in. `/v1/usage` sums by period and
 * mode only (it has no model, key or status filter): the page shows the selected model's and key's rows of
 * the sums instead, and says when the status filter does not apply to the totals.
 */
import { useMutation, useQuery } from "@tanstack/react-query";
import { Link, useSearchParams } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { type Column, DataTable, CursorPager } from "../components/DataTable.tsx";
import { FilterSelect } from "../components/FilterSelect.tsx";
import { EmptyState, ErrorNotice, Loading, QueryView } from "../components/states.tsx";
import { FirstCall } from "../components/FirstCall.tsx";
import { useCursor, useUrlFilters } from "../components/url-state.ts";
import { Charge, DateTime, Usd } from "../components/values.tsx";
import { browserTimeZone, formatCount, isoDateDaysAgo, plural } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { JobLink, RequestLink } from "./ledger.tsx";
import "./ledger.css";

export const page: PageMeta = { path: "/usage", title: "Usage", group: "customer", order: 25, section: "observe" };

type RequestsQuery = NonNullable<paths["/v1/requests"]["get"]["parameters"]["query"]>;
/** One usage record (D29) as `GET /v1/requests` answers it. */
export type UsageRecord = paths["/v1/requests"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
/** One API key as `GET /v1/auth/keys` lists it. */
export type ApiKey = paths["/v1/auth/keys"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type Status = UsageRecord["status"];
type Mode = UsageRecord["mode"];
type GroupBy = "day" | "model" | "key" | "member";

const STATUSES: Status[] = ["succeeded", "failed", "refunded", "expired", "pending", "processing"];

/** Unit names (D29) in the words a table shows, singular and plural ({@link plural}). */
const UNIT_WORDS: Record<keyof UsageRecord["units"], [string, string]> = {
  characters: ["character", "characters"],
  seconds: ["second", "seconds"],
  images: ["image", "images"],
  input_tokens: ["input token", "input tokens"],
  output_tokens: ["output token", "output tokens"],
  cached_tokens: ["cached token", "cached tokens"],
  minutes: ["minute", "minutes"],
};

/** A record's units as words: `25 characters`, `1,024 input tokens · 12 output tokens`; none: an em dash. */
export function formatUnits(units: UsageRecord["units"]): string {
  const parts = (Object.keys(UNIT_WORDS) as (keyof UsageRecord["units"])[])
    .filter((k) => units[k] !== undefined)
    .map((k) => plural(units[k] ?? 0, ...UNIT_WORDS[k]));
  return parts.length > 0 ? parts.join(" · ") : "—";
}

/** A latency in ms as `850 ms` or `2.4 s`; null (not settled yet): an em dash. */
export function formatLatency(ms: number | null): string {
  if (ms === null) return "—";
  return ms < 1000 ? `${formatCount(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A key as people know it: `ci runner (gw_abc…)`, or its id when it is not (or no longer) listed. */
export function keyName(keys: ApiKey[] | undefined, keyId: string | null): string {
  if (keyId === null) return "—";
  const k = keys?.find((x) => x.key_id === keyId);
  if (!k) return keyId;
  return k.name ? `${k.name} (${k.prefix}…)` : `${k.prefix}…`;
}

/** A key in a table cell: its name, else its prefix, else its id. */
function keyShortName(keys: ApiKey[] | undefined, keyId: string | null): string {
  const k = keys?.find((x) => x.key_id === keyId);
  return k ? (k.name ?? `${k.prefix}…`) : (keyId ?? "—");
}

/**
 * The instant (ISO, UTC) of local midnight starting the day `date` (`YYYY-MM-DD`) plus `addDays`, in the
 * browser's zone; undefined for an empty or malformed date.
 */
export function localMidnight(date: string, addDays = 0): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + addDays);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** The account's keys, for the key filter and for naming keys in the table. */
export function useKeys() {
  return useQuery({ queryKey: ["keys"], queryFn: () => unwrap(api.GET("/v1/auth/keys")) });
}

function StatusBadge({ status }: { status: Status }) {
  return <span className={`status status-${status}`}>{status}</span>;
}

/** The bounds and mode shared by the log, the totals and the CSV. */
interface Period {
  from?: string;
  to?: string;
  mode: Mode;
}


/** The page's URL query with the model filter set to `model`, on the first page. */
function withModel(params: URLSearchParams, model: string): string {
  const next = new URLSearchParams(params);
  next.set("model", model);
  next.delete("after");
  return next.toString();
}

function Totals({ period, model, keyId, status, keys }: { period: Period; model: string; keyId: string; status: string; keys: ApiKey[] | undefined }) {
  const [params] = useSearchParams();
  const tz = browserTimeZone();
  const base = { ...(period.from ? { from: period.from } : {}), ...(period.to ? { to: period.to } : {}), mode: period.mode, tz };
  const byModel = useQuery({
    queryKey: ["usage", { ...base, group_by: "model" }],
    queryFn: () => unwrap(api.GET("/v1/usage", { params: { query: { ...base, group_by: "model" } } })),
  });
  const byKey = useQuery({
    queryKey: ["usage", { ...base, group_by: "key" }],
    queryFn: () => unwrap(api.GET("/v1/usage", { params: { query: { ...base, group_by: "key" } } })),
    enabled: keyId !== "",
  });
  if (byModel.isError) return <ErrorNotice error={byModel.error} retry={() => void byModel.refetch()} />;
  if (byModel.data === undefined) return <Loading label="Loading totals…" />;
  const groups = [...byModel.data.data].sort((a, b) => b.cost_usd - a.cost_usd);
  const modelRow = model ? (groups.find((g) => g.group === model) ?? { requests: 0, cost_usd: 0 }) : null;
  const keyRow = keyId && byKey.data ? (byKey.data.data.find((g) => g.group === keyId) ?? { requests: 0, cost_usd: 0 }) : null;
  const columns: Column<(typeof groups)[number]>[] = [
    { header: "Model", cell: (g) => <Link to={`?${withModel(params, g.group)}`} aria-label={`Show only ${g.group}`}>{g.group}</Link> },
    { header: "Requests", numeric: true, cell: (g) => formatCount(g.requests) },
    { header: "Cost", numeric: true, cell: (g) => <Usd amount={g.cost_usd} cents /> },
  ];
  return (
    <>
      <dl className="usage-totals">
        <div>
          <dt>Requests in the period</dt>
          <dd>{formatCount(byModel.data.total.requests)}</dd>
        </div>
        <div>
          <dt>Cost in the period</dt>
          <dd>
            <Usd amount={byModel.data.total.cost_usd} cents />
          </dd>
        </div>
        {modelRow && (
          <div>
            <dt>{model}</dt>
            <dd>
              {plural(modelRow.requests, "request")}, <Usd amount={modelRow.cost_usd} cents />
            </dd>
          </div>
        )}
        {keyId && (
          <div>
            <dt>Key {keyName(keys, keyId)}</dt>
            <dd>
              {keyRow ? (
                <>
                  {plural(keyRow.requests, "request")}, <Usd amount={keyRow.cost_usd} cents />
                </>
              ) : byKey.isError ? (
                "unavailable"
              ) : (
                "…"
              )}
            </dd>
          </div>
        )}
      </dl>
      {(status || (model && keyId)) && (
        <p>
          <small>
            The totals count every {period.mode} call of the period{model && keyId ? ", per model and per key separately" : ""}
            {status ? `, whatever its status (the status filter applies to the log only)` : ""}.
          </small>
        </p>
      )}
      {groups.length > 0 && (
        <details>
          <summary>Totals by model</summary>
          <DataTable columns={columns} rows={groups} rowKey={(g) => g.group} />
        </details>
      )}
    </>
  );
}

/** `usage-2025-03-01-to-2025-03-31-by-model.csv` (the days as the user chose them). */
function csvFileName(fromDay: string, toDay: string, groupBy: GroupBy, mode: Mode): string {
  return `usage-${fromDay || "start"}-to-${toDay || "now"}-by-${groupBy}${mode === "test" ? "-test" : ""}.csv`;
}

/** Hands `blob` to the browser's download as `name`. */
function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  try {
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
  } finally {
    // The click has handed the blob to the browser's download; the object URL is no longer needed.
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }
}

function DownloadCsv({ period, fromDay, toDay, groupBy, setGroupBy }: { period: Period; fromDay: string; toDay: string; groupBy: GroupBy; setGroupBy: (g: GroupBy) => void }) {
  const download = useMutation({
    mutationFn: async () => {
      const query = { ...(period.from ? { from: period.from } : {}), ...(period.to ? { to: period.to } : {}), mode: period.mode, tz: browserTimeZone(), group_by: groupBy };
      // The session token goes as a bearer header, which a plain link cannot send: fetch, then save the blob.
      const blob = (await unwrap(api.GET("/v1/usage.csv", { params: { query }, parseAs: "blob" }))) as Blob;
      saveBlob(blob, csvFileName(fromDay, toDay, groupBy, period.mode));
    },
  });
  // The FOCUS export covers whole UTC days: the chosen days are sent as UTC dates.
  const focus = useMutation({
    mutationFn: async () => {
      const query = { format: "focus" as const, ...(fromDay ? { from: fromDay } : {}), ...(toDay ? { to: toDay } : {}), mode: period.mode };
      const blob = (await unwrap(api.GET("/v1/usage/export", { params: { query }, parseAs: "blob" }))) as Blob;
      saveBlob(blob, `focus-${fromDay || "month"}-to-${toDay || "today"}${period.mode === "test" ? "-test" : ""}.csv`);
    },
  });
  return (
    <section aria-labelledby="usage-csv-title">
      <h2 id="usage-csv-title">Export</h2>
      <div className="usage-actions">
        <div>
          <label htmlFor="usage-csv-group">CSV rows per</label>
          <select id="usage-csv-group" value={groupBy} onChange={(e) => setGroupBy(e.target.value as GroupBy)}>
            <option value="model">model</option>
            <option value="day">day</option>
            <option value="key">key</option>
            <option value="member">member</option>
          </select>
        </div>
        <button type="button" className="secondary" onClick={() => download.mutate()} aria-busy={download.isPending} disabled={download.isPending}>
          Download CSV
        </button>
        <button type="button" className="secondary" onClick={() => focus.mutate()} aria-busy={focus.isPending} disabled={focus.isPending}>
          Download FOCUS 1.2
        </button>
      </div>
      <p>
        <small>
          The CSV sums the period's {period.mode} calls; the model, key and status filters do not apply to it. The FOCUS file is the
          FinOps cost and usage format for finance tools: one row per UTC day, model, member and key of the chosen days.
        </small>
      </p>
      {download.isError && <ErrorNotice error={download.error} />}
      {focus.isError && <ErrorNotice error={focus.error} />}
    </section>
  );
}

export default function Usage() {
  const defaults = { model: "", key_id: "", status: "", mode: "live", from: isoDateDaysAgo(29), to: isoDateDaysAgo(0), csv: "model" };
  const [filters, setFilters] = useUrlFilters(defaults);
  const cursor = useCursor();
  const keys = useKeys();
  const mode: Mode = filters.mode === "test" ? "test" : "live";
  const period: Period = { from: localMidnight(filters.from), to: localMidnight(filters.to, 1), mode };
  const badRange = period.from !== undefined && period.to !== undefined && period.from >= period.to;

  const query: RequestsQuery = {
    limit: "25",
    mode,
    ...(cursor.after ? { after: cursor.after } : {}),
    ...(filters.model ? { model: filters.model } : {}),
    ...(filters.key_id ? { key_id: filters.key_id } : {}),
    ...(STATUSES.includes(filters.status as Status) ? { status: filters.status as Status } : {}),
    ...(period.from ? { from: period.from } : {}),
    ...(period.to ? { to: period.to } : {}),
  };
  const requests = useQuery({
    queryKey: ["requests", query],
    queryFn: () => unwrap(api.GET("/v1/requests", { params: { query } })),
    enabled: !badRange,
  });
  // The model choices: the models of the period (from the totals), plus the one in the URL.
  const tz = browserTimeZone();
  const modelsQuery = { ...(period.from ? { from: period.from } : {}), ...(period.to ? { to: period.to } : {}), mode, tz, group_by: "model" as const };
  const models = useQuery({
    queryKey: ["usage", modelsQuery],
    queryFn: () => unwrap(api.GET("/v1/usage", { params: { query: modelsQuery } })),
    enabled: !badRange,
  });
  const modelChoices = [...new Set([...(models.data?.data.map((g) => g.group) ?? []), ...(filters.model ? [filters.model] : [])])].sort();

  const columns: Column<UsageRecord>[] = [
    { header: "Time", cell: (r) => <DateTime iso={r.created_at} /> },
    {
      header: "Model and kind",
      cell: (r) => (
        <>
          {r.model}
          <br />
          <small>{r.kind}</small>
        </>
      ),
    },
    { header: "Status", cell: (r) => <StatusBadge status={r.status} /> },
    { header: "Units", cell: (r) => formatUnits(r.units) },
    {
      header: "Cost",
      numeric: true,
      cell: (r) =>
        r.mode === "test" ? (
          <Charge mode="test" amount={r.cost_usd ?? r.hold_usd} />
        ) : r.cost_usd === null ? (
          <small>
            held <Usd amount={r.hold_usd} />
          </small>
        ) : (
          <Usd amount={r.cost_usd} />
        ),
    },
    { header: "Latency", numeric: true, cell: (r) => formatLatency(r.latency_ms) },
    { header: "Key", cell: (r) => <span title={keyName(keys.data?.data, r.key_id)}>{keyShortName(keys.data?.data, r.key_id)}</span> },
    {
      header: "Request and job",
      cell: (r) => (
        <>
          <RequestLink id={r.id} />
          {r.job_id && (
            <>
              <br />
              <JobLink id={r.job_id} />
            </>
          )}
        </>
      ),
    },
  ];

  const onKey = (keyId: string) => {
    // A test-mode key's calls are in the test log (D32): follow the key's mode.
    const k = keys.data?.data.find((x) => x.key_id === keyId);
    setFilters({ key_id: keyId, ...(k ? { mode: k.mode } : {}) });
  };

  return (
    <>
      <form className="filters usage-filters" role="search" aria-label="Filter the request log" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="usage-from">From</label>
          <input id="usage-from" type="date" value={filters.from} max={filters.to || undefined} onChange={(e) => setFilters({ from: e.target.value })} />
        </div>
        <div>
          <label htmlFor="usage-to">To (included)</label>
          <input id="usage-to" type="date" value={filters.to} min={filters.from || undefined} onChange={(e) => setFilters({ to: e.target.value })} />
        </div>
        <FilterSelect id="usage-model" label="Model" anyLabel="All models" value={filters.model} options={modelChoices} onChange={(v) => setFilters({ model: v })} />
        <div>
          <label htmlFor="usage-key">Key</label>
          <select id="usage-key" value={filters.key_id} onChange={(e) => onKey(e.target.value)}>
            <option value="">All keys</option>
            {filters.key_id && !keys.data?.data.some((k) => k.key_id === filters.key_id) && <option value={filters.key_id}>{filters.key_id}</option>}
            {keys.data?.data.map((k) => (
              <option key={k.key_id} value={k.key_id}>
                {keyName(keys.data?.data, k.key_id)}
                {k.mode === "test" ? " · test" : ""}
              </option>
            ))}
          </select>
        </div>
        <FilterSelect id="usage-status" label="Status" anyLabel="Any status" value={filters.status} options={STATUSES} onChange={(v) => setFilters({ status: v })} />
        <div>
          <label htmlFor="usage-mode">Key mode</label>
          <select id="usage-mode" value={mode} onChange={(e) => setFilters({ mode: e.target.value, key_id: "" })}>
            <option value="live">Live calls</option>
            <option value="test">Test calls (no money moved)</option>
          </select>
        </div>
      </form>

      {badRange ? (
        <div role="alert" className="notice error">
          <p>The start date is after the end date.</p>
        </div>
      ) : (
        <>
          <section aria-labelledby="usage-totals-title">
            <h2 id="usage-totals-title">Totals</h2>
            <Totals period={period} model={filters.model} keyId={filters.key_id} status={filters.status} keys={keys.data?.data} />
          </section>
          <DownloadCsv period={period} fromDay={filters.from} toDay={filters.to} groupBy={filters.csv as GroupBy} setGroupBy={(g) => setFilters({ csv: g })} />
          <section aria-labelledby="usage-log-title">
            <h2 id="usage-log-title">Requests</h2>
            <QueryView
              query={requests}
              isEmpty={(d) => d.data.length === 0 && !cursor.hasPrevious}
              empty={
                filters.model || filters.key_id || filters.status ? (
                  "No requests match these filters."
                ) : (
                  <EmptyState
                    after={<FirstCall kind="chat" />}
                    title={mode === "test" ? "No test-mode calls in this period." : "No calls in this period."}
                    actions={
                      <Link to="/playground" role="button">
                        Try the playground
                      </Link>
                    }
                  >
                    <p>Every call made with your keys shows here: speech, music, chat, images and videos, with its cost.</p>
                  </EmptyState>
                )
              }
              loadingLabel="Loading requests…"
            >
              {(d) => (
                <>
                  <div className="usage-table">
                    <DataTable columns={columns} rows={d.data} rowKey={(r) => r.id} />
                  </div>
                  <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
                </>
              )}
            </QueryView>
          </section>
        </>
      )}
    </>
  );
}
