/**
 * The ledger (D8, D17, D29): every change of the balance, newest first (`GET /v1/billing/ledger`, cursor
 * paged): the kind (deposit, hold, hold release, charge, refund...), the signed amount, the balance right
 * after, the request and the job it belongs to (links to the request detail and the job) and the reference.
 *
 * The API has no kind filter, so the page offers none. Amounts carry an explicit sign and the words
 * "credit"/"debit" for screen readers; the colour only repeats what the sign says.
 */
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { type Column, DataTable, CursorPager } from "../components/DataTable.tsx";
import { QueryView } from "../components/states.tsx";
import { useCursor } from "../components/url-state.ts";
import { DateTime, Usd } from "../components/values.tsx";
import { formatUsd } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import "./ledger.css";

export const page: PageMeta = { path: "/ledger", title: "Ledger", group: "customer", order: 50, section: "billing" };

/** One ledger entry as `GET /v1/billing/ledger` (and `GET /v1/requests/{id}`) answers it. */
export type LedgerEntry = paths["/v1/billing/ledger"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

/** What each entry kind means to a customer (D8, D17). */
export const LEDGER_KIND_LABELS: Record<LedgerEntry["kind"], string> = {
  signup_credit: "Signup credit",
  deposit: "Deposit",
  hold: "Hold",
  hold_release: "Hold released",
  charge: "Charge",
  refund: "Refund",
  adjustment: "Adjustment",
};

/**
 * A signed amount (USD): `+$5.00` in green or `-$0.054` in red, with "credit"/"debit" for screen readers,
 * so the colour is never the only cue. Zero reads `$0.00` without a sign.
 */
export function SignedUsd({ amount }: { amount: number }) {
  const cls = amount > 0 ? "amount-credit" : amount < 0 ? "amount-debit" : "amount-zero";
  return (
    <span className={`usd ${cls}`}>
      {amount > 0 ? "+" : ""}
      {formatUsd(amount)}
      {amount !== 0 && <span className="amount-sr"> {amount > 0 ? "credit" : "debit"}</span>}
    </span>
  );
}

/** `req_0Vbu3ssT…`: the start of an id, enough to tell rows apart. */
function shortId(id: string): string {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id;
}

/** A request id shortened for a table cell (`req_AbCdEf…`); the full id is the link's accessible name. */
export function RequestLink({ id }: { id: string }) {
  return (
    <Link to={`/usage/${encodeURIComponent(id)}`} aria-label={`Request ${id}`} title={id}>
      <span className="short-id">{shortId(id)}</span>
    </Link>
  );
}

/** A job id as a link to the job's page (the Jobs pages, `/jobs/:id`). */
export function JobLink({ id }: { id: string }) {
  return (
    <Link to={`/jobs/${encodeURIComponent(id)}`} aria-label={`Job ${id}`} title={id}>
      <span className="short-id">{shortId(id)}</span>
    </Link>
  );
}

/** The columns of a ledger table; `withBalance: false` leaves out "Balance after" (the request detail). */
export function ledgerColumns({ withBalance = true, withRequest = true }: { withBalance?: boolean; withRequest?: boolean } = {}): Column<LedgerEntry>[] {
  const cols: (Column<LedgerEntry> | false)[] = [
    { header: "Time", cell: (e) => <DateTime iso={e.created_at} /> },
    { header: "Kind", cell: (e) => LEDGER_KIND_LABELS[e.kind] ?? e.kind },
    { header: "Amount", numeric: true, cell: (e) => <SignedUsd amount={e.amount_usd} /> },
    withBalance && { header: "Balance after", numeric: true, cell: (e) => <Usd amount={e.balance_usd} /> },
    withRequest && { header: "Request", cell: (e) => (e.request_id ? <RequestLink id={e.request_id} /> : "—") },
    { header: "Job", cell: (e) => (e.job_id ? <JobLink id={e.job_id} /> : "—") },
    { header: "Reference", cell: (e) => e.reference ?? "—" },
  ];
  return cols.filter((c): c is Column<LedgerEntry> => c !== false);
}

const COLUMNS = ledgerColumns();

export default function Ledger() {
  const cursor = useCursor();
  const query = { limit: "25", ...(cursor.after ? { after: cursor.after } : {}) };
  const ledger = useQuery({ queryKey: ["ledger", query], queryFn: () => unwrap(api.GET("/v1/billing/ledger", { params: { query } })) });
  return (
    <>
      <p>
        Every change of your balance, newest first. A paid call first places a hold, then is charged what it cost and the rest of the hold is
        released; a failed call releases its whole hold.
      </p>
      <QueryView query={ledger} isEmpty={(d) => d.data.length === 0 && !cursor.hasPrevious} empty="No ledger entries yet." loadingLabel="Loading the ledger…">
        {(d) => (
          <>
            <div className="usage-table">
              <DataTable columns={COLUMNS} rows={d.data} rowKey={(e) => e.id} />
            </div>
            <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
          </>
        )}
      </QueryView>
    </>
  );
}
