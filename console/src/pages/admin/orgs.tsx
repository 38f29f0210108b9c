/**
 * Operator: find an organization (`GET /v1/admin/orgs?q=`, D41): `q` is an exact organization id or the
 * start of a name (a personal organization is named after its owner's email), kept in the URL with the
 * page cursor; newest first, 20 a page. Each row links to the organization's page.
 */
import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link } from "react-router";
import { api, type paths } from "../../api.ts";
import { type Column, CursorPager, DataTable } from "../../components/DataTable.tsx";
import { QueryView } from "../../components/states.tsx";
import { useCursor, useUrlFilters } from "../../components/url-state.ts";
import { DateTime, Usd } from "../../components/values.tsx";
import { formatCount } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { operatorHeaders, operatorUnwrap } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/orgs", title: "Organizations", group: "operator", order: 2 };

type Org = paths["/v1/admin/orgs"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

const COLUMNS: Column<Org>[] = [
  {
    header: "Name",
    cell: (o) => (
      <Link className="wrap-anywhere name-cell" to={`/operator/orgs/${encodeURIComponent(o.org_id)}`}>
        {o.name ?? o.org_id}
      </Link>
    ),
  },
  { header: "Organization id", cell: (o) => <code>{o.org_id}</code> },
  { header: "Members", cell: (o) => formatCount(o.members), numeric: true },
  { header: "Balance", cell: (o) => <Usd amount={o.balance_usd} />, numeric: true },
  { header: "Deposits", cell: (o) => <Usd amount={o.total_deposits_usd} />, numeric: true },
  { header: "Tier", cell: (o) => (o.tier_override === null ? o.tier_name : `${o.tier_name} (override)`) },
  { header: "Keys", cell: (o) => formatCount(o.keys), numeric: true },
  { header: "Created", cell: (o) => <DateTime iso={o.created_at} /> },
];

export default function Orgs() {
  const [filters, setFilters] = useUrlFilters({ q: "" });
  const cursor = useCursor();
  // Edited locally and applied on submit: each key stroke would otherwise be a request.
  const [draft, setDraft] = useState(filters.q);
  const query = { limit: "20", ...(filters.q ? { q: filters.q } : {}), ...(cursor.after ? { after: cursor.after } : {}) };
  const orgs = useQuery({
    queryKey: ["admin-orgs", query],
    queryFn: () => operatorUnwrap(api.GET("/v1/admin/orgs", { params: { query }, headers: operatorHeaders() })),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFilters({ q: draft.trim() });
  };
  return (
    <>
      <form role="search" onSubmit={submit} className="filters">
        <label htmlFor="org-q">Name prefix or organization id</label>
        <div role="group">
          <input id="org-q" type="search" placeholder="Acme or org_…" maxLength={254} value={draft} onChange={(e) => setDraft(e.target.value)} />
          <button type="submit">Search</button>
        </div>
      </form>
      <QueryView query={orgs} isEmpty={(d) => d.data.length === 0} empty={filters.q ? `No organization matches “${filters.q}”.` : "No organizations yet."}>
        {(d) => (
          <>
            <DataTable columns={COLUMNS} rows={d.data} rowKey={(o) => o.org_id} />
            <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.org_id} />
          </>
        )}
      </QueryView>
    </>
  );
}
