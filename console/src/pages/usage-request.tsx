/**
 * One request of the usage log (D29): `GET /v1/requests/{id}`, the record (model, kind, status, units,
 * cost and hold, latency, fallback layer, key, job) and its ledger entries, oldest first (the hold, then
 * its charge and release; none for a test-mode key). Reached from the Usage and Ledger pages.
 */
import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "react-router";
import { api, unwrap } from "../api.ts";
import { DataTable } from "../components/DataTable.tsx";
import { Empty, QueryView } from "../components/states.tsx";
import { Charge, DateTime, Usd } from "../components/values.tsx";
import type { PageMeta } from "../pages.ts";
import { JobLink, ledgerColumns } from "./ledger.tsx";
import { formatLatency, formatUnits, keyName, useKeys } from "./usage.tsx";

export const page: PageMeta = { path: "/usage/:id", title: "Request details", group: "customer", order: 41, nav: false };

const LEDGER_COLUMNS = ledgerColumns({ withRequest: false });

export default function UsageRequest() {
  const { id = "" } = useParams();
  const keys = useKeys();
  const request = useQuery({
    queryKey: ["requests", "detail", id],
    queryFn: () => unwrap(api.GET("/v1/requests/{id}", { params: { path: { id } } })),
  });
  return (
    <>
      <p>
        <Link to="/usage">Back to usage</Link>
      </p>
      <QueryView query={request} loadingLabel="Loading the request…">
        {(r) => (
          <>
            <section aria-labelledby="request-record-title">
              <h2 id="request-record-title" className="request-title">
                Request <code>{r.id}</code>
              </h2>
              <dl className="request-fields">
                <dt>Time</dt>
                <dd>
                  <DateTime iso={r.created_at} />
                </dd>
                <dt>Model</dt>
                <dd>{r.model}</dd>
                <dt>Kind</dt>
                <dd>{r.kind}</dd>
                <dt>Status</dt>
                <dd>
                  <span className={`status status-${r.status}`}>{r.status}</span>
                </dd>
                <dt>Mode</dt>
                <dd className={`mode mode-${r.mode}`}>{r.mode === "test" ? "test (priced, no money moved)" : "live"}</dd>
                <dt>Units</dt>
                <dd>{formatUnits(r.units)}</dd>
                <dt>Cost</dt>
                <dd>
                  {r.mode === "test" ? (
                    <Charge mode="test" amount={r.cost_usd ?? r.hold_usd} />
                  ) : r.cost_usd === null ? (
                    "not settled yet"
                  ) : (
                    <Usd amount={r.cost_usd} />
                  )}
                </dd>
                <dt>{r.mode === "test" ? "Would have held" : "Held"}</dt>
                <dd>
                  <Usd amount={r.hold_usd} />
                </dd>
                <dt>Latency</dt>
                <dd>{formatLatency(r.latency_ms)}</dd>
                <dt>Source</dt>
                <dd>{r.fallback_layer === 0 ? "first choice" : `fallback ${r.fallback_layer}`}</dd>
                <dt>Key</dt>
                <dd>{keyName(keys.data?.data, r.key_id)}</dd>
                <dt>Job</dt>
                <dd>{r.job_id ? <JobLink id={r.job_id} /> : "—"}</dd>
              </dl>
            </section>
            <section aria-labelledby="request-ledger-title">
              <h2 id="request-ledger-title">Ledger entries</h2>
              {r.ledger.length === 0 ? (
                <Empty>{r.mode === "test" ? "None: a test-mode call moves no money." : "None yet."}</Empty>
              ) : (
                <div className="usage-table">
                  <DataTable columns={LEDGER_COLUMNS} rows={r.ledger} rowKey={(e) => e.id} />
                </div>
              )}
            </section>
          </>
        )}
      </QueryView>
    </>
  );
}
