/**
 * Your organizations (D41, issue 42): every organization the user belongs to (`GET /v1/orgs`), each with its
 * name in full, the user's role, the member count, whether it is the personal one (made at registration)
 * or a team, its balance and tier; "Switch to" makes one the organization the console acts for (org.ts,
 * as the sidebar's switcher does, which links here), and "New organization" creates one
 * (`POST /v1/orgs`: any signed-in user may, and becomes its owner).
 */
import { useState } from "react";
import { Link } from "react-router";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { NewOrgDialog, type Org, orgLabel, useActiveOrg, useOrgs } from "../components/OrgSwitcher.tsx";
import { QueryView } from "../components/states.tsx";
import { Usd } from "../components/values.tsx";
import { formatCount, plural } from "../format.ts";
import { selectOrg } from "../org.ts";
import type { PageMeta } from "../pages.ts";

export const page: PageMeta = { path: "/organizations", title: "Your organizations", navLabel: "Organizations", group: "customer", order: 65, section: "organization" };

export default function Organizations() {
  const orgs = useOrgs();
  const active = useActiveOrg();
  const [creating, setCreating] = useState(false);
  const columns: Column<Org>[] = [
    {
      header: "Name",
      cell: (o) => (
        <span className="wrap-anywhere org-name-cell">
          {orgLabel(o)}
          {o.id === active?.id && <small> (current)</small>}
        </span>
      ),
    },
    { header: "Your role", cell: (o) => o.role },
    { header: "Members", numeric: true, cell: (o) => formatCount(o.member_count) },
    { header: "Type", cell: (o) => (o.personal ? "personal" : "team") },
    { header: "Balance", numeric: true, cell: (o) => <Usd amount={o.balance_usd} cents /> },
    { header: "Tier", cell: (o) => <span className="nowrap">{o.tier_name}</span> },
    {
      header: "Actions",
      cell: (o) => (
        <span className="actions">
          {o.id === active?.id ? (
            <Link to="/members">Members</Link>
          ) : (
            <button type="button" className="secondary outline small" aria-label={`Switch to ${orgLabel(o)}`} onClick={() => selectOrg(o.id)}>
              Switch to
            </button>
          )}
        </span>
      ),
    },
  ];
  return (
    <>
      <div className="page-intro">
        <p className="lead">
          Each organization has its own balance, keys, usage and members. The console acts for the current one; switch here or in the sidebar.
        </p>
        <button type="button" className="page-action" onClick={() => setCreating(true)}>
          New organization
        </button>
      </div>
      <QueryView query={orgs}>
        {(d) => (
          <>
            <p>
              <small>You belong to {plural(d.data.length, "organization")}.</small>
            </p>
            <DataTable columns={columns} rows={d.data} rowKey={(o) => o.id} />
          </>
        )}
      </QueryView>
      <NewOrgDialog open={creating} onClose={() => setCreating(false)} />
    </>
  );
}
