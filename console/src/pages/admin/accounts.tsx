/**
 * Operator: find an account (`GET /v1/admin/users?q=`, docs/operator-api.md): `q` is the start of an email
 * or an exact user id, kept in the URL with the page cursor; newest accounts first, 20 a page. Each row
 * links to the account's page.
 */
import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link } from "react-router";
import { api, type paths } from "../../api.ts";
import { type Column, DataTable, CursorPager } from "../../components/DataTable.tsx";
import { QueryView } from "../../components/states.tsx";
import { useCursor, useUrlFilters } from "../../components/url-state.ts";
import { DateTime, Usd } from "../../components/values.tsx";
import { formatCount } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { operatorHeaders, operatorUnwrap } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/accounts", title: "Accounts", group: "operator", order: 0 };

type Account = paths["/v1/admin/users"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

const COLUMNS: Column<Account>[] = [
  { header: "Email", cell: (a) => <Link to={`/operator/accounts/${encodeURIComponent(a.user_id)}`}>{a.email}</Link> },
  { header: "Account id", cell: (a) => <code>{a.user_id}</code> },
  { header: "Balance", cell: (a) => <Usd amount={a.balance_usd} />, numeric: true },
  { header: "Deposits", cell: (a) => <Usd amount={a.total_deposits_usd} />, numeric: true },
  { header: "Tier", cell: (a) => (a.tier_override === null ? a.tier_name : `${a.tier_name} (override)`) },
  { header: "Keys", cell: (a) => formatCount(a.keys), numeric: true },
  { header: "Key last used", cell: (a) => (a.last_key_used_at ? <DateTime iso={a.last_key_used_at} /> : "never") },
  { header: "Registered", cell: (a) => <DateTime iso={a.created_at} /> },
];

export default function Accounts() {
  const [filters, setFilters] = useUrlFilters({ q: "" });
  const cursor = useCursor();
  // The field is edited locally and applied on submit: each key stroke would otherwise be a request.
  const [draft, setDraft] = useState(filters.q);
  const query = { limit: "20", ...(filters.q ? { q: filters.q } : {}), ...(cursor.after ? { after: cursor.after } : {}) };
  const accounts = useQuery({
    queryKey: ["admin-users", query],
    queryFn: () => operatorUnwrap(api.GET("/v1/admin/users", { params: { query }, headers: operatorHeaders() })),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setFilters({ q: draft.trim() });
  };
  return (
    <>
      <form role="search" onSubmit={submit} className="filters">
        <label htmlFor="account-q">Email prefix or account id</label>
        <div role="group">
          <input id="account-q" type="search" placeholder="alice@ or usr_…" maxLength={254} value={draft} onChange={(e) => setDraft(e.target.value)} />
          <button type="submit">Search</button>
        </div>
      </form>
      <QueryView query={accounts} isEmpty={(d) => d.data.length === 0} empty={filters.q ? `No account matches “${filters.q}”.` : "No accounts yet."}>
        {(d) => (
          <>
            <DataTable columns={COLUMNS} rows={d.data} rowKey={(a) => a.user_id} />
            <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.user_id} />
          </>
        )}
      </QueryView>
    </>
  );
}
