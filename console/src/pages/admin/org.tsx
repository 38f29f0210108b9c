/**
 * Operator: one organization (`GET /v1/admin/orgs/{org_id}`, D41): balance, tier, deposits, keys, its
 * members with their roles (each linking to the member's account page), the effective limits and the
 * operator's overrides; forms to credit a deposit, set a tier override and override single limits; and
 * its ledger, usage records and usage by model. The blocks are the account page's (account.tsx), acting
 * on the organization's paths.
 */
import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "react-router";
import { api, type paths } from "../../api.ts";
import { type Column, DataTable } from "../../components/DataTable.tsx";
import { QueryView } from "../../components/states.tsx";
import { DateTime, Usd } from "../../components/values.tsx";
import { formatCount } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { Activity, DepositForm, Limits, LimitsForm, type Target, TierForm } from "./account.tsx";
import { operatorHeaders, operatorUnwrap } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/orgs/:orgId", title: "Organization", group: "operator", order: 3, nav: false };

type OrgDetail = paths["/v1/admin/orgs/{org_id}"]["get"]["responses"][200]["content"]["application/json"];
type Member = OrgDetail["members_list"][number];

const MEMBER_COLUMNS: Column<Member>[] = [
  {
    header: "Email",
    cell: (m) => (
      <Link className="wrap-anywhere" to={`/operator/accounts/${encodeURIComponent(m.user_id)}`}>
        {m.email}
      </Link>
    ),
  },
  { header: "Role", cell: (m) => m.role },
  { header: "User id", cell: (m) => <code>{m.user_id}</code> },
  { header: "Joined", cell: (m) => <DateTime iso={m.created_at} /> },
];

function Summary({ o }: { o: OrgDetail }) {
  return (
    <div className="grid cards">
      <article aria-labelledby="org-balance">
        <h2 id="org-balance">Balance</h2>
        <p className="big-number">
          <Usd amount={o.balance_usd} />
        </p>
        <p>
          <small>
            Deposited in total: <Usd amount={o.total_deposits_usd} />
          </small>
        </p>
      </article>
      <article aria-labelledby="org-tier">
        <h2 id="org-tier">Tier</h2>
        <p className="big-number">{o.tier_name}</p>
        <p>
          <small>{o.tier_override === null ? "By deposits (no override)." : `Override: tier ${o.tier_override}.`}</small>
        </p>
      </article>
      <article aria-labelledby="org-about">
        <h2 id="org-about">Organization</h2>
        <dl className="limits">
          <dt>Name</dt>
          <dd className="wrap">{o.name ?? "—"}</dd>
          <dt>Id</dt>
          <dd className="wrap">
            <code>{o.org_id}</code>
          </dd>
          <dt>Created</dt>
          <dd>
            <DateTime iso={o.created_at} />
          </dd>
          <dt>Members</dt>
          <dd>{formatCount(o.members)}</dd>
          <dt>API keys</dt>
          <dd>{formatCount(o.keys)}</dd>
          <dt>Key last used</dt>
          <dd>{o.last_key_used_at ? <DateTime iso={o.last_key_used_at} /> : "never"}</dd>
        </dl>
      </article>
    </div>
  );
}

export default function Org() {
  const orgId = useParams().orgId ?? "";
  const org = useQuery({
    queryKey: ["admin-org", orgId],
    queryFn: () => operatorUnwrap(api.GET("/v1/admin/orgs/{org_id}", { params: { path: { org_id: orgId } }, headers: operatorHeaders() })),
  });
  return (
    <QueryView query={org}>
      {(o) => {
        const target: Target = { kind: "org", id: o.org_id };
        return (
          <>
            <p className="wrap-anywhere">{o.name ?? o.org_id}</p>
            <Summary o={o} />
            <section aria-labelledby="org-members">
              <h2 id="org-members">Members</h2>
              <DataTable columns={MEMBER_COLUMNS} rows={o.members_list} rowKey={(m) => m.user_id} />
            </section>
            <Limits a={o} />
            <div className="grid cards">
              <DepositForm target={target} />
              <TierForm target={target} a={o} />
            </div>
            <LimitsForm target={target} a={o} />
            <Activity target={target} />
          </>
        );
      }}
    </QueryView>
  );
}
