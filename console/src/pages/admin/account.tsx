/**
 * Operator: one account (docs/operator-api.md): balance, tier (effective, and the override if any),
 * deposits, keys, the effective limits and the operator's overrides (D9, D22); forms to credit a deposit,
 * set or clear a tier override and override single limits; and the account's ledger, usage records and
 * usage by model, one at a time (`view` and the page cursor in the URL). The account is the user's
 * personal organization (D41); the blocks below the summary act on a {@link Target}, so the organization
 * page (org.tsx, `/v1/admin/orgs/{org_id}...`) shows the same limits, forms and activity.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { Link, useParams } from "react-router";
import { api, type paths } from "../../api.ts";
import { type Column, DataTable, CursorPager } from "../../components/DataTable.tsx";
import { ErrorNotice, QueryView } from "../../components/states.tsx";
import { useCursor, useUrlFilters } from "../../components/url-state.ts";
import { DateTime, Usd } from "../../components/values.tsx";
import { browserTimeZone, formatCount, isoDateDaysAgo, plural } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { tierJobs } from "../../tiers.ts";
import { operatorHeaders, operatorUnwrap, TIERS } from "./operator-api.ts";

export const page: PageMeta = { path: "/operator/accounts/:userId", title: "Account", group: "operator", order: 1, nav: false };

type AccountDetail = paths["/v1/admin/users/{user_id}"]["get"]["responses"][200]["content"]["application/json"];
type LedgerEntry = paths["/v1/admin/users/{user_id}/ledger"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type UsageRecord = paths["/v1/admin/users/{user_id}/requests"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type UsageGroup = paths["/v1/admin/users/{user_id}/usage"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

/** The count limits an operator can override (D22), with their labels. */
const COUNT_LIMITS = [
  ["rpm", "Requests per minute"],
  ["per_model_rpm", "Per model, per minute"],
  ["tpm", "Tokens per minute"],
  ["max_single_request", "Largest single request"],
  ["image_concurrent", "Image jobs at once"],
  ["image_queue_depth_cap", "Image jobs queued"],
  ["video_concurrent", "Video jobs at once"],
  ["video_queue_depth_cap", "Video jobs queued"],
] as const;
/** The audio pools of `audio_concurrent_per_provider`. */
const POOLS = ["host_1", "host_2", "alpha", "beta", "host_3"] as const;

function useUserId(): string {
  return useParams().userId ?? "";
}

/**
 * What an operator block acts on: a user's personal organization (`/v1/admin/users/{user_id}/...`) or an
 * organization (`/v1/admin/orgs/{org_id}/...`, D41). Both answer the same shapes.
 */
export type Target = { kind: "user"; id: string } | { kind: "org"; id: string };

/** The query key of `target`'s detail and its parts: `["admin-user", id, ...]` or `["admin-org", id, ...]`. */
function targetKey(t: Target, ...rest: unknown[]): unknown[] {
  return [t.kind === "user" ? "admin-user" : "admin-org", t.id, ...rest];
}

type DepositBody = NonNullable<paths["/v1/admin/users/{user_id}/deposits"]["post"]["requestBody"]>["content"]["application/json"];
type TierBody = NonNullable<paths["/v1/admin/users/{user_id}/tier"]["put"]["requestBody"]>["content"]["application/json"];
type LimitsBody = NonNullable<paths["/v1/admin/users/{user_id}/limits"]["put"]["requestBody"]>["content"]["application/json"];
type PageQuery = { limit: string; after?: string };
type UsageQuery = { group_by: "model"; from: string; tz: string };

/** The operator calls of a {@link Target}, each on the user's or the organization's path. */
const calls = {
  deposit: (t: Target, body: DepositBody) =>
    t.kind === "user"
      ? api.POST("/v1/admin/users/{user_id}/deposits", { params: { path: { user_id: t.id } }, body, headers: operatorHeaders() })
      : api.POST("/v1/admin/orgs/{org_id}/deposits", { params: { path: { org_id: t.id } }, body, headers: operatorHeaders() }),
  tier: (t: Target, body: TierBody) =>
    t.kind === "user"
      ? api.PUT("/v1/admin/users/{user_id}/tier", { params: { path: { user_id: t.id } }, body, headers: operatorHeaders() })
      : api.PUT("/v1/admin/orgs/{org_id}/tier", { params: { path: { org_id: t.id } }, body, headers: operatorHeaders() }),
  limits: (t: Target, body: LimitsBody) =>
    t.kind === "user"
      ? api.PUT("/v1/admin/users/{user_id}/limits", { params: { path: { user_id: t.id } }, body, headers: operatorHeaders() })
      : api.PUT("/v1/admin/orgs/{org_id}/limits", { params: { path: { org_id: t.id } }, body, headers: operatorHeaders() }),
  ledger: (t: Target, query: PageQuery) =>
    t.kind === "user"
      ? api.GET("/v1/admin/users/{user_id}/ledger", { params: { path: { user_id: t.id }, query }, headers: operatorHeaders() })
      : api.GET("/v1/admin/orgs/{org_id}/ledger", { params: { path: { org_id: t.id }, query }, headers: operatorHeaders() }),
  requests: (t: Target, query: PageQuery) =>
    t.kind === "user"
      ? api.GET("/v1/admin/users/{user_id}/requests", { params: { path: { user_id: t.id }, query }, headers: operatorHeaders() })
      : api.GET("/v1/admin/orgs/{org_id}/requests", { params: { path: { org_id: t.id }, query }, headers: operatorHeaders() }),
  usage: (t: Target, query: UsageQuery) =>
    t.kind === "user"
      ? api.GET("/v1/admin/users/{user_id}/usage", { params: { path: { user_id: t.id }, query }, headers: operatorHeaders() })
      : api.GET("/v1/admin/orgs/{org_id}/usage", { params: { path: { org_id: t.id }, query }, headers: operatorHeaders() }),
};

/** Invalidates everything shown about the account or organization after a change. */
function useRefreshAccount() {
  const queryClient = useQueryClient();
  return () => {
    for (const k of ["admin-user", "admin-users", "admin-org", "admin-orgs"]) void queryClient.invalidateQueries({ queryKey: [k] });
  };
}

/** What the limits blocks read of an account or organization (both details have these fields). */
type LimitsOf = Pick<AccountDetail, "limits" | "limits_override" | "tier_override">;

function Summary({ a }: { a: AccountDetail }) {
  return (
    <div className="grid cards">
      <article aria-labelledby="acct-balance">
        <h2 id="acct-balance">Balance</h2>
        <p className="big-number">
          <Usd amount={a.balance_usd} />
        </p>
        <p>
          <small>
            Deposited in total: <Usd amount={a.total_deposits_usd} />
          </small>
        </p>
      </article>
      <article aria-labelledby="acct-tier">
        <h2 id="acct-tier">Tier</h2>
        <p className="big-number">{a.tier_name}</p>
        <p>
          <small>{a.tier_override === null ? "By deposits (no override)." : `Override: tier ${a.tier_override}.`}</small>
        </p>
      </article>
      <article aria-labelledby="acct-about">
        <h2 id="acct-about">Account</h2>
        <dl className="limits">
          <dt>Email</dt>
          <dd className="wrap">{a.email}</dd>
          <dt>Id</dt>
          <dd className="wrap">
            <code>{a.user_id}</code>
          </dd>
          <dt>Organization</dt>
          <dd className="wrap">
            <Link to={`/operator/orgs/${encodeURIComponent(a.org_id)}`}>
              <code>{a.org_id}</code>
            </Link>
          </dd>
          <dt>Registered</dt>
          <dd>
            <DateTime iso={a.created_at} />
          </dd>
          <dt>API keys</dt>
          <dd>{formatCount(a.keys)}</dd>
          <dt>Key last used</dt>
          <dd>{a.last_key_used_at ? <DateTime iso={a.last_key_used_at} /> : "never"}</dd>
        </dl>
      </article>
    </div>
  );
}

export function Limits({ a }: { a: LimitsOf }) {
  const l = a.limits;
  const overridden = Object.keys(a.limits_override);
  const pools = Object.entries(l.audio_concurrent_per_provider ?? {}) as [string, number][];
  return (
    <section aria-labelledby="acct-limits">
      <h2 id="acct-limits">Effective limits</h2>
      <p>{overridden.length === 0 ? `The limits of ${l.name}, no override.` : `The limits of ${l.name}, with the operator's overrides of: ${overridden.join(", ")}.`}</p>
      <dl className="limits narrow">
        {COUNT_LIMITS.filter(([k]) => k !== "image_queue_depth_cap" && k !== "video_queue_depth_cap" && k !== "image_concurrent" && k !== "video_concurrent").map(([k, label]) => (
          <Limit key={k} label={label} value={formatCount(l[k])} overridden={overridden.includes(k)} />
        ))}
        <Limit label="Image jobs at once (queued)" value={tierJobs(l, "image")} overridden={overridden.includes("image_concurrent") || overridden.includes("image_queue_depth_cap")} />
        <Limit label="Video jobs at once (queued)" value={tierJobs(l, "video")} overridden={overridden.includes("video_concurrent") || overridden.includes("video_queue_depth_cap")} />
        <Limit
          label="Audio calls at once, by pool"
          value={pools.map(([p, n]) => `${p} ${formatCount(n)}`).join(", ") || formatCount(l.audio_concurrent)}
          overridden={overridden.includes("audio_concurrent_per_provider")}
        />
      </dl>
    </section>
  );
}

function Limit({ label, value, overridden }: { label: string; value: string; overridden: boolean }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        {value}
        {overridden && <small> (override)</small>}
      </dd>
    </>
  );
}

export function DepositForm({ target }: { target: Target }) {
  const refresh = useRefreshAccount();
  const [amount, setAmount] = useState("");
  const [reference, setReference] = useState("");
  const deposit = useMutation({
    mutationFn: () =>
      operatorUnwrap(calls.deposit(target, { amount_usd: amount.trim(), ...(reference.trim() ? { reference: reference.trim() } : {}) })),
    onSuccess: () => {
      setAmount("");
      setReference("");
      refresh();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    deposit.mutate();
  };
  return (
    <article aria-labelledby="deposit-title">
      <h2 id="deposit-title">Credit a deposit</h2>
      <form onSubmit={submit}>
        <label htmlFor="deposit-amount">Amount (USD)</label>
        <input id="deposit-amount" type="text" inputMode="decimal" pattern="[0-9]+(\.[0-9]{1,6})?" required placeholder="25.00" value={amount} onChange={(e) => setAmount(e.target.value)} />
        <label htmlFor="deposit-reference">Reference</label>
        <input id="deposit-reference" type="text" maxLength={200} placeholder="invoice 2026-117" value={reference} onChange={(e) => setReference(e.target.value)} />
        {deposit.isError && <ErrorNotice error={deposit.error} />}
        {deposit.isSuccess && (
          <p role="status" className="notice success">
            Deposited. Balance now <Usd amount={deposit.data.balance_usd} />, tier {deposit.data.tier}.
          </p>
        )}
        <button type="submit" aria-busy={deposit.isPending} disabled={deposit.isPending}>
          Deposit
        </button>
      </form>
    </article>
  );
}

export function TierForm({ target, a }: { target: Target; a: LimitsOf }) {
  const refresh = useRefreshAccount();
  const [tier, setTier] = useState(a.tier_override === null ? "" : String(a.tier_override));
  const save = useMutation({
    mutationFn: () =>
      operatorUnwrap(calls.tier(target, { tier: tier === "" ? null : Number(tier) })),
    onSuccess: refresh,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <article aria-labelledby="tier-override-title">
      <h2 id="tier-override-title">Tier override</h2>
      <form onSubmit={submit}>
        <label htmlFor="tier-override">Tier</label>
        <select id="tier-override" value={tier} onChange={(e) => setTier(e.target.value)}>
          <option value="">No override (by deposits)</option>
          {TIERS.map((t) => (
            <option key={t} value={String(t)}>
              Tier {t}
            </option>
          ))}
        </select>
        {save.isError && <ErrorNotice error={save.error} />}
        {save.isSuccess && (
          <p role="status" className="notice success">
            Saved: tier {save.data.tier} {save.data.tier_override === null ? "(by deposits)" : "(override)"}.
          </p>
        )}
        <button type="submit" aria-busy={save.isPending} disabled={save.isPending}>
          Save tier
        </button>
      </form>
    </article>
  );
}

export function LimitsForm({ target, a }: { target: Target; a: LimitsOf }) {
  const refresh = useRefreshAccount();
  const id = useId();
  const o = a.limits_override as Record<string, unknown>;
  const initial: Record<string, string> = {};
  for (const [k] of COUNT_LIMITS) initial[k] = typeof o[k] === "number" ? String(o[k]) : "";
  const audio = (o.audio_concurrent_per_provider ?? {}) as Record<string, unknown>;
  for (const p of POOLS) initial[`pool:${p}`] = typeof audio[p] === "number" ? String(audio[p]) : "";
  const [values, setValues] = useState(initial);
  const save = useMutation({
    mutationFn: () => {
      // Every field is sent: a blank one drops its override (null), so the form is the whole override set.
      const body: Record<string, number | null | Record<string, number>> = {};
      for (const [k] of COUNT_LIMITS) body[k] = values[k].trim() === "" ? null : Number(values[k]);
      const pools = Object.fromEntries(POOLS.filter((p) => values[`pool:${p}`].trim() !== "").map((p) => [p, Number(values[`pool:${p}`])]));
      body.audio_concurrent_per_provider = Object.keys(pools).length > 0 ? pools : null;
      return operatorUnwrap(calls.limits(target, body as LimitsBody));
    },
    onSuccess: refresh,
  });
  const field = (key: string, label: string) => (
    <div key={key}>
      <label htmlFor={`${id}-${key}`}>{label}</label>
      <input
        id={`${id}-${key}`}
        type="number"
        min={0}
        step={1}
        inputMode="numeric"
        placeholder="tier default"
        value={values[key]}
        onChange={(e) => setValues({ ...values, [key]: e.target.value })}
      />
    </div>
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <article aria-labelledby="limits-override-title">
      <h2 id="limits-override-title">Custom limits</h2>
      <p>
        <small>A blank field follows the tier; a number overrides it for this {target.kind === "user" ? "account" : "organization"} only (D22).</small>
      </p>
      <form onSubmit={submit}>
        <div className="filters">{COUNT_LIMITS.map(([k, label]) => field(k, label))}</div>
        <fieldset>
          <legend>Audio calls at once, by pool</legend>
          <div className="filters">{POOLS.map((p) => field(`pool:${p}`, `Pool ${p}`))}</div>
        </fieldset>
        {save.isError && <ErrorNotice error={save.error} />}
        {save.isSuccess && (
          <p role="status" className="notice success">
            Limits saved.
          </p>
        )}
        <button type="submit" aria-busy={save.isPending} disabled={save.isPending}>
          Save limits
        </button>
      </form>
    </article>
  );
}

const LEDGER_COLUMNS: Column<LedgerEntry>[] = [
  { header: "When", cell: (e) => <DateTime iso={e.created_at} /> },
  { header: "Kind", cell: (e) => e.kind },
  { header: "Amount", cell: (e) => <Usd amount={e.amount_usd} />, numeric: true },
  { header: "Balance after", cell: (e) => <Usd amount={e.balance_usd} />, numeric: true },
  { header: "Reference", cell: (e) => e.reference ?? (e.job_id ? <code>{e.job_id}</code> : e.request_id ? <code>{e.request_id}</code> : "—") },
];

const REQUEST_COLUMNS: Column<UsageRecord>[] = [
  { header: "When", cell: (r) => <DateTime iso={r.created_at} /> },
  { header: "Model", cell: (r) => r.model },
  { header: "Kind", cell: (r) => r.kind },
  { header: "Status", cell: (r) => r.status },
  { header: "Cost", cell: (r) => (r.cost_usd === null ? <small>held <Usd amount={r.hold_usd} /></small> : <Usd amount={r.cost_usd} />), numeric: true },
  { header: "Request id", cell: (r) => <code>{r.id}</code> },
];

const USAGE_COLUMNS: Column<UsageGroup>[] = [
  { header: "Model", cell: (g) => g.group },
  { header: "Calls", cell: (g) => formatCount(g.requests), numeric: true },
  { header: "Cost", cell: (g) => <Usd amount={g.cost_usd} />, numeric: true },
];

function Ledger({ target }: { target: Target }) {
  const cursor = useCursor();
  const query = { limit: "20", ...(cursor.after ? { after: cursor.after } : {}) };
  const ledger = useQuery({ queryKey: targetKey(target, "ledger", query), queryFn: () => operatorUnwrap(calls.ledger(target, query)) });
  return (
    <QueryView query={ledger} isEmpty={(d) => d.data.length === 0} empty="No ledger entries.">
      {(d) => (
        <>
          <DataTable columns={LEDGER_COLUMNS} rows={d.data} rowKey={(e) => e.id} caption="Ledger, newest first" />
          <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
        </>
      )}
    </QueryView>
  );
}

function Requests({ target }: { target: Target }) {
  const cursor = useCursor();
  const query = { limit: "20", ...(cursor.after ? { after: cursor.after } : {}) };
  const records = useQuery({ queryKey: targetKey(target, "requests", query), queryFn: () => operatorUnwrap(calls.requests(target, query)) });
  return (
    <QueryView query={records} isEmpty={(d) => d.data.length === 0} empty="No paid calls.">
      {(d) => (
        <>
          <DataTable columns={REQUEST_COLUMNS} rows={d.data} rowKey={(r) => r.id} caption="Paid calls, newest first" />
          <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
        </>
      )}
    </QueryView>
  );
}

function Usage({ target }: { target: Target }) {
  const query: UsageQuery = { group_by: "model", from: isoDateDaysAgo(29), tz: browserTimeZone() };
  const usage = useQuery({ queryKey: targetKey(target, "usage", query), queryFn: () => operatorUnwrap(calls.usage(target, query)) });
  return (
    <QueryView query={usage} isEmpty={(d) => d.data.length === 0} empty="No paid calls in the last 30 days.">
      {(d) => (
        <>
          <p>
            Last 30 days: <Usd amount={d.total.cost_usd} /> in {plural(d.total.requests, "call")}.
          </p>
          <DataTable columns={USAGE_COLUMNS} rows={d.data} rowKey={(g) => g.group} caption="Usage by model, last 30 days" />
        </>
      )}
    </QueryView>
  );
}

const VIEWS = [
  ["ledger", "Ledger"],
  ["requests", "Requests"],
  ["usage", "Usage"],
] as const;

export function Activity({ target }: { target: Target }) {
  const [filters, setFilters] = useUrlFilters({ view: "ledger" });
  const view = VIEWS.some(([v]) => v === filters.view) ? filters.view : "ledger";
  return (
    <section aria-labelledby="activity-title">
      <h2 id="activity-title">Activity</h2>
      <div role="group" aria-label="Show" className="pager">
        {VIEWS.map(([v, label]) => (
          <button key={v} type="button" className={v === view ? undefined : "secondary outline"} aria-pressed={v === view} onClick={() => setFilters({ view: v })}>
            {label}
          </button>
        ))}
      </div>
      {view === "ledger" && <Ledger target={target} />}
      {view === "requests" && <Requests target={target} />}
      {view === "usage" && <Usage target={target} />}
    </section>
  );
}

export default function Account() {
  const userId = useUserId();
  const account = useQuery({
    queryKey: ["admin-user", userId],
    queryFn: () => operatorUnwrap(api.GET("/v1/admin/users/{user_id}", { params: { path: { user_id: userId } }, headers: operatorHeaders() })),
  });
  return (
    <QueryView query={account}>
      {(a) => {
        const target: Target = { kind: "user", id: a.user_id };
        return (
          <>
            <p>{a.email}</p>
            <Summary a={a} />
            <Limits a={a} />
            <div className="grid cards">
              <DepositForm target={target} />
              <TierForm target={target} a={a} />
            </div>
            <LimitsForm target={target} a={a} />
            <Activity target={target} />
          </>
        );
      }}
    </QueryView>
  );
}
