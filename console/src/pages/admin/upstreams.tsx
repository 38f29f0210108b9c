/**
 * Operator: upstream health (`GET /v1/admin/upstreams`, docs/operator-api.md, D25): per configured source,
 * its circuit, calls in flight, over the last window its error rate and median / 95th percentile latency,
 * and its latest failure (`last_error`, D35). Refreshed every 5 seconds; the figures are the answering
 * process's own view.
 */
import { useQuery } from "@tanstack/react-query";
import { api, type paths } from "../../api.ts";
import { type Column, DataTable } from "../../components/DataTable.tsx";
import { QueryView } from "../../components/states.tsx";
import { formatCount, plural } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { operatorHeaders, operatorUnwrap } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/upstreams", title: "Upstreams", group: "operator", order: 10 };

type Upstream = paths["/v1/admin/upstreams"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

/** How often the page asks again, ms. */
const REFRESH_MS = 5000;

const CIRCUIT_LABEL: Record<Upstream["circuit"], string> = { closed: "closed (healthy)", open: "open (failing, skipped)", half_open: "half open (trial next)" };

const ms = (v: number | null) => (v === null ? "—" : `${formatCount(v)} ms`);

const COLUMNS: Column<Upstream>[] = [
  { header: "Source", cell: (u) => <strong>{u.name}</strong> },
  { header: "Protocol", cell: (u) => u.protocol },
  { header: "Families", cell: (u) => u.families.join(", ") },
  { header: "Circuit", cell: (u) => <span className={`status circuit-${u.circuit}`}>{CIRCUIT_LABEL[u.circuit]}</span> },
  { header: "In flight", cell: (u) => formatCount(u.in_flight), numeric: true },
  { header: "Calls (failed)", cell: (u) => `${formatCount(u.successes + u.failures)} (${formatCount(u.failures)})`, numeric: true },
  { header: "Error rate", cell: (u) => (u.error_rate === null ? "—" : `${(u.error_rate * 100).toFixed(1)} %`), numeric: true },
  { header: "p50", cell: (u) => ms(u.p50_ms), numeric: true },
  { header: "p95", cell: (u) => ms(u.p95_ms), numeric: true },
  { header: "Last error", cell: (u) => <LastError error={u.last_error} /> },
];

/** A source's latest failure: its code, when, and the message (D35); a dash when none. */
function LastError({ error }: { error: Upstream["last_error"] }) {
  if (error === null) return <>—</>;
  const at = new Date(error.at);
  return (
    <span title={error.message}>
      <code>{error.code}</code> at <time dateTime={error.at}>{at.toLocaleString()}</time>
      <br />
      <small>{error.message}</small>
    </span>
  );
}

/** A time of day to the second, in the browser's zone: the refresh is every few seconds. */
function UpdatedAt({ ms }: { ms: number }) {
  const d = new Date(ms);
  return <time dateTime={d.toISOString()}>{d.toLocaleTimeString()}</time>;
}

export default function Upstreams() {
  const upstreams = useQuery({
    queryKey: ["admin-upstreams"],
    queryFn: () => operatorUnwrap(api.GET("/v1/admin/upstreams", { headers: operatorHeaders() })),
    refetchInterval: REFRESH_MS,
  });
  const windowS = upstreams.data?.data[0]?.window_s;
  return (
    <>
      <p>
        Refreshed every {REFRESH_MS / 1000} seconds{upstreams.dataUpdatedAt > 0 && <> (last at <UpdatedAt ms={upstreams.dataUpdatedAt} />)</>}.
        {windowS !== undefined && ` Calls, error rate and latency cover the last ${plural(windowS / 60, "minute")}.`} With several gateway processes,
        this is the view of the one that answered.
      </p>
      <QueryView
        query={upstreams}
        isEmpty={(d) => d.data.length === 0}
        empty="No upstream sources are configured (UPSTREAMS, TEXT_UPSTREAMS): every model family is served by the built-in simulator."
      >
        {(d) => <DataTable columns={COLUMNS} rows={d.data} rowKey={(u) => u.name} caption="Upstream sources" />}
      </QueryView>
    </>
  );
}
