/**
 * The audit log of the selected organization (D45, `GET /v1/orgs/{org_id}/audit-log`): who changed what,
 * newest first, cursor paged, filtered by action, actor and a date range (kept in the URL), each entry with
 * its actor, target, the fields before and after, and the request id, address and user agent; and a CSV
 * of the filtered entries (`format=csv`) fetched with the session token and saved through a download link.
 * Owners and admins only: other roles are told so instead of seeing the gateway's 403.
 *
 * Dates are days in the browser's time zone, sent as the instants of their local midnights (`to` the
 * midnight after the last day, exclusive), as on the usage page.
 */
import { useMutation, useQuery } from "@tanstack/react-query";
import { api, type paths, unwrap } from "../api.ts";
import { type Column, CursorPager, DataTable } from "../components/DataTable.tsx";
import { FilterSelect } from "../components/FilterSelect.tsx";
import { orgLabel, useActiveOrg } from "../components/OrgSwitcher.tsx";
import { ErrorNotice, Loading, QueryView } from "../components/states.tsx";
import { useCursor, useUrlFilters } from "../components/url-state.ts";
import { DateTime } from "../components/values.tsx";
import { isoDateDaysAgo } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { can } from "../roles.ts";
import { localMidnight } from "./usage.tsx";
import "./ledger.css";

export const page: PageMeta = { path: "/audit-log", title: "Audit log", group: "customer", order: 75, section: "organization" };

type AuditQuery = NonNullable<paths["/v1/orgs/{org_id}/audit-log"]["get"]["parameters"]["query"]>;
/** A page of the log as the gateway answers it (JSON; the same route answers CSV with `format=csv`). */
type AuditPage = paths["/v1/orgs/{org_id}/audit-log"]["get"]["responses"][200]["content"]["application/json"];
/** One entry as the gateway answers it. */
export type AuditEntry = AuditPage["data"][number];

/** The actions an organization's log holds, for the action filter. */
export const AUDIT_ACTIONS = [
  "key.created",
  "key.updated",
  "key.revoked",
  "member.updated",
  "member.removed",
  "invite.created",
  "invite.revoked",
  "invite.accepted",
  "org.created",
  "org.updated",
  "org.deleted",
  "budget.created",
  "budget.updated",
  "budget.deleted",
  "webhook.created",
  "webhook.deleted",
  "webhook.secret_rotated",
  "alert.updated",
  "topup.credited",
  "deposit.created",
  "tier.updated",
  "limits.updated",
  "user.registered",
  "session.created",
  "session.failed",
] as const;

/** A value of `changes` as a short text: strings as they are, `null` as an em dash, the rest as JSON. */
export function formatChangeValue(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** Who made a change, in words: a user's email (or id), `key key_…`, or `operator`. */
export function actorLabel(actor: AuditEntry["actor"]): string {
  if (actor.type === "user") return actor.email ?? actor.id;
  if (actor.type === "key") return `key ${actor.id}`;
  return actor.id === "operator" ? "operator" : `operator (${actor.id})`;
}

function Changes({ changes }: { changes: AuditEntry["changes"] }) {
  const fields = Object.entries(changes as Record<string, [unknown, unknown]>);
  if (fields.length === 0) return <small>—</small>;
  return (
    <ul className="audit-changes">
      {fields.map(([field, [before, after]]) => (
        <li key={field}>
          <code>{field}</code>: <span className="before">{formatChangeValue(before)}</span> → <span className="after">{formatChangeValue(after)}</span>
        </li>
      ))}
    </ul>
  );
}

const columns: Column<AuditEntry>[] = [
  { header: "Time", cell: (e) => <DateTime iso={e.at} /> },
  { header: "Action", cell: (e) => <code>{e.action}</code> },
  {
    header: "Actor",
    cell: (e) => (
      <span className="wrap-anywhere" title={`${e.actor.type} ${e.actor.id}`}>
        {actorLabel(e.actor)}
        <br />
        <small>{e.actor.type}</small>
      </span>
    ),
  },
  {
    header: "Target",
    cell: (e) => (
      <span className="wrap-anywhere">
        {e.target.type}
        <br />
        <small>{e.target.id}</small>
      </span>
    ),
  },
  { header: "Changes", cell: (e) => <Changes changes={e.changes} /> },
  {
    header: "Request",
    cell: (e) => (
      <span className="wrap-anywhere">
        <small>
          <code>{e.request_id}</code>
          <br />
          {e.ip ?? "—"}
          {e.user_agent && (
            <>
              <br />
              <span title={e.user_agent}>{e.user_agent.length > 40 ? `${e.user_agent.slice(0, 40)}…` : e.user_agent}</span>
            </>
          )}
        </small>
      </span>
    ),
  },
];

/** `audit-log-2025-03-01-to-2025-03-31.csv` (the days as the user chose them). */
function csvFileName(fromDay: string, toDay: string): string {
  return `audit-log-${fromDay || "start"}-to-${toDay || "now"}.csv`;
}

function DownloadCsv({ orgId, query, fromDay, toDay }: { orgId: string; query: AuditQuery; fromDay: string; toDay: string }) {
  const download = useMutation({
    mutationFn: async () => {
      const { after: _after, limit: _limit, ...filters } = query;
      // The session token goes as a bearer header, which a plain link cannot send: fetch, then save the blob.
      const blob = (await unwrap(
        api.GET("/v1/orgs/{org_id}/audit-log", { params: { path: { org_id: orgId }, query: { ...filters, format: "csv" } }, parseAs: "blob" }),
      )) as unknown as Blob;
      const url = URL.createObjectURL(blob);
      try {
        const a = document.createElement("a");
        a.href = url;
        a.download = csvFileName(fromDay, toDay);
        document.body.append(a);
        a.click();
        a.remove();
      } finally {
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
      }
    },
  });
  return (
    <>
      <div className="usage-actions">
        <button type="button" className="secondary" onClick={() => download.mutate()} aria-busy={download.isPending} disabled={download.isPending}>
          Download CSV
        </button>
      </div>
      <p>
        <small>The CSV holds every entry matching the filters (up to 10,000), with a header row.</small>
      </p>
      {download.isError && <ErrorNotice error={download.error} />}
    </>
  );
}

export default function AuditLog() {
  const org = useActiveOrg();
  const defaults = { action: "", actor: "", from: isoDateDaysAgo(29), to: isoDateDaysAgo(0) };
  const [filters, setFilters] = useUrlFilters(defaults);
  const cursor = useCursor();
  const from = localMidnight(filters.from);
  const to = localMidnight(filters.to, 1);
  const badRange = from !== undefined && to !== undefined && from >= to;
  const allowed = org !== undefined && can(org.role, "auditLog");
  const actor = filters.actor.trim();
  const query: AuditQuery = {
    limit: "25",
    ...(cursor.after ? { after: cursor.after } : {}),
    ...(filters.action ? { action: filters.action } : {}),
    ...(actor ? { actor_id: actor } : {}),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  };
  const orgId = org?.id ?? "";
  const entries = useQuery({
    queryKey: ["audit-log", orgId, query],
    queryFn: async () => (await unwrap(api.GET("/v1/orgs/{org_id}/audit-log", { params: { path: { org_id: orgId }, query } }))) as AuditPage,
    enabled: allowed && !badRange,
  });
  if (!org) return <Loading label="Loading the organization…" />;
  if (!allowed) {
    return (
      <p className="notice">
        The audit log of {orgLabel(org)} is for its owners and admins; your role is {org.role}.
      </p>
    );
  }
  return (
    <>
      <p className="lead">
        Every change made to <strong>{orgLabel(org)}</strong> through the API: keys, members and invites, budgets, webhooks, alerts, top-ups and the
        operator&apos;s deposits, tier and limits, and sign-ins. Entries are never changed or deleted, and never hold a secret.
      </p>
      <form className="filters usage-filters" role="search" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="audit-from">From</label>
          <input id="audit-from" type="date" value={filters.from} max={filters.to || undefined} onChange={(e) => setFilters({ from: e.target.value })} />
        </div>
        <div>
          <label htmlFor="audit-to">To (included)</label>
          <input id="audit-to" type="date" value={filters.to} min={filters.from || undefined} onChange={(e) => setFilters({ to: e.target.value })} />
        </div>
        <FilterSelect id="audit-action" label="Action" anyLabel="All actions" value={filters.action} options={AUDIT_ACTIONS} onChange={(v) => setFilters({ action: v })} />
        <div>
          <label htmlFor="audit-actor">Actor id</label>
          <input
            id="audit-actor"
            type="search"
            placeholder="usr_…, key_… or operator"
            maxLength={200}
            value={filters.actor}
            onChange={(e) => setFilters({ actor: e.target.value })}
          />
        </div>
      </form>
      {badRange ? (
        <div role="alert" className="notice error">
          <p>The start date is after the end date.</p>
        </div>
      ) : (
        <section aria-labelledby="audit-title">
          <h2 id="audit-title">Entries</h2>
          <DownloadCsv orgId={org.id} query={query} fromDay={filters.from} toDay={filters.to} />
          <QueryView
            query={entries}
            isEmpty={(d) => d.data.length === 0 && !cursor.hasPrevious}
            empty={filters.action || actor ? "No entries match these filters." : "No changes in this period."}
            loadingLabel="Loading the audit log…"
          >
            {(d) => (
              <>
                <div className="usage-table">
                  <DataTable columns={columns} rows={d.data} rowKey={(e) => e.id} />
                </div>
                <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
              </>
            )}
          </QueryView>
        </section>
      )}
    </>
  );
}
