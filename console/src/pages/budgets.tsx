/**
 * Budgets (D44): the organization's budgets, each with its scope (the whole organization, a member or a
 * key, named as people know them), its current window in the budget's own time zone, what was spent and
 * what remains (a bar), its action and alert thresholds; the keys' spend limits (D34) are listed as key
 * budgets. Owners and admins create budgets (a dialog: scope, amount, period, time zone, action,
 * thresholds), edit them (`PATCH` with the changed fields only; a key's spend limit changes its amount
 * and period only) and delete them after a confirmation; members and viewers read (roles.ts). A refused
 * field (the D1 `error.param`) shows its message under that field.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { api, type paths, unwrap } from "../api.ts";
import {
  BUDGET_PERIODS,
  type BudgetAction,
  type BudgetPeriod,
  DEFAULT_THRESHOLDS,
  isTimeZone,
  parseThresholds,
  periodLabel,
  spentShare,
  thresholdsText,
  timeZones,
  windowText,
} from "../budgets.ts";
import { ConfirmDialog, useModalDialog } from "../components/ConfirmDialog.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { FieldError, fieldErrors, OtherError } from "../components/FieldError.tsx";
import { ErrorNotice, QueryView } from "../components/states.tsx";
import { Usd } from "../components/values.tsx";
import { browserTimeZone } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { can, type Role, useRole } from "../roles.ts";

export const page: PageMeta = { path: "/budgets", title: "Budgets", group: "customer", order: 40, section: "billing" };

type Budget = paths["/v1/budgets"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type CreateBody = NonNullable<paths["/v1/budgets"]["post"]["requestBody"]>["content"]["application/json"];
type PatchBody = NonNullable<paths["/v1/budgets/{budget_id}"]["patch"]["requestBody"]>["content"]["application/json"];
type ScopeType = Budget["scope"]["type"];

/** The fields of the forms, by their request names (the D1 `param` of a refusal). */
const FIELDS = ["scope", "amount_usd", "period", "timezone", "action", "thresholds"] as const;

/** The organization acted for, its members and its keys: what a scope's id is called. */
function useNames() {
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")) });
  const orgId = me.data?.org_id;
  const members = useQuery({
    queryKey: ["members", orgId],
    queryFn: () => unwrap(api.GET("/v1/orgs/{org_id}/members", { params: { path: { org_id: orgId ?? "" } } })),
    enabled: orgId !== undefined,
  });
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => unwrap(api.GET("/v1/auth/keys")) });
  return {
    orgId,
    orgName: me.data?.org_name ?? null,
    members: members.data?.data ?? [],
    keys: keys.data?.data ?? [],
  };
}
type Names = ReturnType<typeof useNames>;

/** A scope as people know it: `Organization`, a member's email, a key's name and prefix (the id when unknown). */
function scopeText(scope: Budget["scope"], names: Names): { kind: string; name: string } {
  if (scope.type === "org") return { kind: "Organization", name: names.orgName ?? scope.id };
  if (scope.type === "member") return { kind: "Member", name: names.members.find((m) => m.user_id === scope.id)?.email ?? scope.id };
  const k = names.keys.find((x) => x.key_id === scope.id);
  return { kind: "Key", name: k ? `${k.name ?? "unnamed"} (${k.prefix}…)` : scope.id };
}

/** A budget's name in a sentence or a label: `Daily budget of Organization Acme`. */
function budgetLabel(b: Budget, names: Names): string {
  const s = scopeText(b.scope, names);
  return `${periodLabel(b.period)} budget of ${s.kind.toLowerCase()} ${s.name}`;
}

/** Spent against the amount, with a bar, and what remains. */
function Spend({ b, label }: { b: Budget; label: string }) {
  const over = b.remaining_usd <= 0;
  const share = spentShare(b);
  return (
    <span className="key-spend budget-spend">
      <span>
        <Usd amount={b.spent_usd} /> of <Usd amount={b.amount_usd} />
      </span>
      <progress value={share} max={1} aria-label={`Spent of the ${label}`} className={over ? "over" : undefined} />
      <small>
        {over ? <span className="status status-failed">{b.action === "block" ? "reached: calls refused" : "reached"}</span> : <>
          <Usd amount={b.remaining_usd} /> left
        </>}
      </small>
    </span>
  );
}

/** What the form fields hold, as typed. */
interface Draft {
  scopeType: ScopeType;
  scopeId: string;
  amount: string;
  period: BudgetPeriod;
  timezone: string;
  action: BudgetAction;
  thresholds: string;
}

function draftOf(b: Budget): Draft {
  return {
    scopeType: b.scope.type,
    scopeId: b.scope.id,
    amount: String(b.amount_usd),
    period: b.period,
    timezone: b.timezone,
    action: b.action,
    thresholds: b.thresholds.join(", "),
  };
}

/** The fields shared by the create and edit forms; `limitOnly`: a key's spend limit (amount and period only). */
function BudgetFields({ idPrefix, draft, set, errors, limitOnly = false }: { idPrefix: string; draft: Draft; set: (d: Partial<Draft>) => void; errors: ReturnType<typeof fieldErrors>; limitOnly?: boolean }) {
  const id = (f: string) => `${idPrefix}-${f}`;
  const badThresholds = parseThresholds(draft.thresholds) === null;
  return (
    <>
      <div className="grid">
        <div>
          <label htmlFor={id("amount")}>Amount (USD)</label>
          <input
            id={id("amount")}
            type="number"
            min={0.000001}
            step="any"
            inputMode="decimal"
            required
            value={draft.amount}
            onChange={(e) => set({ amount: e.target.value })}
            {...errors.input("amount_usd", id("amount-help"))}
          />
          <small id={id("amount-help")}>The budget for each window.</small>
          <FieldError errors={errors} field="amount_usd" />
        </div>
        <div>
          <label htmlFor={id("period")}>Period</label>
          <select id={id("period")} value={draft.period} onChange={(e) => set({ period: e.target.value as BudgetPeriod })} {...errors.input("period")}>
            {BUDGET_PERIODS.map(([p, label]) => (
              <option key={p} value={p}>
                {label}
              </option>
            ))}
          </select>
          <FieldError errors={errors} field="period" />
        </div>
      </div>
      {!limitOnly && (
        <>
          <label htmlFor={id("timezone")}>Time zone</label>
          <input
            id={id("timezone")}
            type="text"
            list={id("timezones")}
            spellCheck={false}
            autoComplete="off"
            required
            value={draft.timezone}
            onChange={(e) => set({ timezone: e.target.value })}
            aria-invalid={draft.timezone !== "" && !isTimeZone(draft.timezone) ? true : undefined}
            {...errors.input("timezone", id("timezone-help"))}
          />
          <datalist id={id("timezones")}>
            {timeZones().map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
          <small id={id("timezone-help")}>Windows start at midnight of this zone (weeks on Monday, months on the 1st), e.g. Asia/Tokyo.</small>
          <FieldError errors={errors} field="timezone" />
          <fieldset>
            <legend>When the amount is reached</legend>
            <label>
              <input type="radio" name={id("action")} value="block" checked={draft.action === "block"} onChange={() => set({ action: "block" })} />
              Block: refuse calls that would go past it (402)
            </label>
            <label>
              <input type="radio" name={id("action")} value="alert" checked={draft.action === "alert"} onChange={() => set({ action: "alert" })} />
              Alert only: send events, keep serving
            </label>
          </fieldset>
          <label htmlFor={id("thresholds")}>Alert thresholds (%)</label>
          <input
            id={id("thresholds")}
            type="text"
            inputMode="numeric"
            placeholder="no alerts"
            value={draft.thresholds}
            onChange={(e) => set({ thresholds: e.target.value })}
            aria-invalid={badThresholds ? true : undefined}
            {...errors.input("thresholds", id("thresholds-help"))}
          />
          <small id={id("thresholds-help")}>
            Whole percentages from 1 to 100, separated by commas: each sends one <code>budget.threshold</code> webhook event per window. Empty: none.
          </small>
          {badThresholds && (
            <small role="alert" className="field-error">
              Type whole percentages from 1 to 100, such as 50, 80, 100.
            </small>
          )}
          <FieldError errors={errors} field="thresholds" />
        </>
      )}
    </>
  );
}

/** The create form in a modal dialog. */
function CreateBudgetDialog({ open, onClose, names }: { open: boolean; onClose: () => void; names: Names }) {
  const ref = useModalDialog(open);
  return (
    <dialog ref={ref} aria-labelledby="create-budget-title" onCancel={(e) => (e.preventDefault(), onClose())}>
      {open && <CreateBudgetForm onClose={onClose} names={names} />}
    </dialog>
  );
}

function CreateBudgetForm({ onClose, names }: { onClose: () => void; names: Names }) {
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState<Draft>({
    scopeType: "org",
    scopeId: "",
    amount: "",
    period: "month",
    timezone: browserTimeZone(),
    action: "block",
    thresholds: DEFAULT_THRESHOLDS.join(", "),
  });
  const set = (d: Partial<Draft>) => setDraft({ ...draft, ...d });
  const create = useMutation({
    mutationFn: (body: CreateBody) => unwrap(api.POST("/v1/budgets", { body })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["budgets"] });
      onClose();
    },
  });
  const errors = fieldErrors(create.error, FIELDS, "create-budget");
  const scopeId = draft.scopeType === "org" ? (names.orgId ?? "") : draft.scopeId;
  const thresholds = parseThresholds(draft.thresholds);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (thresholds === null || scopeId === "") return;
    create.mutate({
      scope: { type: draft.scopeType, id: scopeId },
      amount_usd: Number(draft.amount),
      period: draft.period,
      timezone: draft.timezone.trim(),
      action: draft.action,
      thresholds,
    });
  };
  return (
    <article>
      <h2 id="create-budget-title">Create a budget</h2>
      <form onSubmit={submit} aria-labelledby="create-budget-title">
        <div className="grid">
          <div>
            <label htmlFor="create-budget-scope">Applies to</label>
            <select id="create-budget-scope" value={draft.scopeType} onChange={(e) => set({ scopeType: e.target.value as ScopeType, scopeId: "" })} {...errors.input("scope")}>
              <option value="org">the whole organization</option>
              <option value="member">one member</option>
              <option value="key">one API key</option>
            </select>
          </div>
          {draft.scopeType !== "org" && (
            <div>
              <label htmlFor="create-budget-scope-id">{draft.scopeType === "member" ? "Member" : "Key"}</label>
              <select id="create-budget-scope-id" required value={draft.scopeId} onChange={(e) => set({ scopeId: e.target.value })} {...errors.input("scope")}>
                <option value="" disabled>
                  Choose…
                </option>
                {draft.scopeType === "member"
                  ? names.members.map((m) => (
                      <option key={m.user_id} value={m.user_id}>
                        {m.email} ({m.role})
                      </option>
                    ))
                  : names.keys.map((k) => (
                      <option key={k.key_id} value={k.key_id}>
                        {k.name ?? "unnamed"} ({k.prefix}…){k.mode === "test" ? " · test" : ""}
                      </option>
                    ))}
              </select>
            </div>
          )}
        </div>
        <FieldError errors={errors} field="scope" />
        <BudgetFields idPrefix="create-budget" draft={draft} set={set} errors={errors} />
        <OtherError errors={errors} />
        <footer>
          <button type="button" className="secondary" onClick={onClose} disabled={create.isPending}>
            Cancel
          </button>
          <button type="submit" aria-busy={create.isPending} disabled={create.isPending || thresholds === null || scopeId === ""}>
            Create budget
          </button>
        </footer>
      </form>
    </article>
  );
}

/** The fields of `draft` that differ from `b`, as a PATCH body. */
function changes(b: Budget, draft: Draft, limitOnly: boolean): PatchBody | null {
  const body: PatchBody = {};
  const amount = Number(draft.amount);
  if (amount !== b.amount_usd) body.amount_usd = amount;
  if (draft.period !== b.period) body.period = draft.period;
  if (limitOnly) return body;
  if (draft.timezone.trim() !== b.timezone) body.timezone = draft.timezone.trim();
  if (draft.action !== b.action) body.action = draft.action;
  const thresholds = parseThresholds(draft.thresholds);
  if (thresholds === null) return null;
  if (thresholds.join(",") !== b.thresholds.join(",")) body.thresholds = thresholds;
  return body;
}

function EditBudgetDialog({ editing, onClose, names }: { editing: Budget | null; onClose: () => void; names: Names }) {
  const ref = useModalDialog(editing !== null);
  return (
    <dialog ref={ref} aria-labelledby="edit-budget-title" onCancel={(e) => (e.preventDefault(), onClose())}>
      {editing && <EditBudgetForm key={editing.id} b={editing} onClose={onClose} names={names} />}
    </dialog>
  );
}

function EditBudgetForm({ b, onClose, names }: { b: Budget; onClose: () => void; names: Names }) {
  const queryClient = useQueryClient();
  const limitOnly = b.source === "key_spend_limit";
  const [draft, setDraft] = useState<Draft>(() => draftOf(b));
  const save = useMutation({
    mutationFn: (body: PatchBody) => unwrap(api.PATCH("/v1/budgets/{budget_id}", { params: { path: { budget_id: b.id } }, body })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["budgets"] });
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
      onClose();
    },
  });
  const errors = fieldErrors(save.error, FIELDS, "edit-budget");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = changes(b, draft, limitOnly);
    if (body === null) return;
    if (Object.keys(body).length === 0) onClose();
    else save.mutate(body);
  };
  return (
    <article>
      <h2 id="edit-budget-title">Edit the {budgetLabel(b, names)}</h2>
      {limitOnly && <p>This is the key's spend limit: its amount and period (in UTC) change the key's limit.</p>}
      <form onSubmit={submit}>
        <BudgetFields idPrefix="edit-budget" draft={draft} set={(d) => setDraft({ ...draft, ...d })} errors={errors} limitOnly={limitOnly} />
        <OtherError errors={errors} />
        <footer>
          <button type="button" className="secondary" onClick={onClose} disabled={save.isPending}>
            Cancel
          </button>
          <button type="submit" aria-busy={save.isPending} disabled={save.isPending}>
            Save changes
          </button>
        </footer>
      </form>
    </article>
  );
}

function BudgetList({ manage, names }: { manage: boolean; names: Names }) {
  const queryClient = useQueryClient();
  const budgets = useQuery({ queryKey: ["budgets"], queryFn: () => unwrap(api.GET("/v1/budgets")) });
  const [editing, setEditing] = useState<Budget | null>(null);
  const [deleting, setDeleting] = useState<Budget | null>(null);
  const remove = useMutation({
    mutationFn: (b: Budget) => unwrap(api.DELETE("/v1/budgets/{budget_id}", { params: { path: { budget_id: b.id } } })),
    onSuccess: () => {
      setDeleting(null);
      void queryClient.invalidateQueries({ queryKey: ["budgets"] });
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  const columns: Column<Budget>[] = [
    {
      header: "Applies to",
      cell: (b) => {
        const s = scopeText(b.scope, names);
        return (
          <span className="key-name">
            <span className="wrap-anywhere">{s.name}</span>
            <small>
              {s.kind}
              {b.source === "key_spend_limit" ? " · the key's spend limit" : ""}
            </small>
          </span>
        );
      },
    },
    {
      header: "Window",
      cell: (b) => (
        <span className="key-dates">
          <span>
            {periodLabel(b.period)}: {windowText(b)}
          </span>
          <small>{b.timezone}</small>
        </span>
      ),
    },
    { header: "Spent", cell: (b) => <Spend b={b} label={budgetLabel(b, names)} /> },
    {
      header: "Action",
      cell: (b) => (
        <span className="key-dates">
          <span className={`status ${b.action === "block" ? "" : "status-alert"}`}>{b.action === "block" ? "block" : "alert only"}</span>
          <small>{b.thresholds.length === 0 ? "no alerts" : `alerts at ${thresholdsText(b.thresholds)}`}</small>
        </span>
      ),
    },
  ];
  if (manage)
    columns.push({
      header: "Actions",
      cell: (b) => (
        <span className="actions">
          <button type="button" className="secondary outline small" aria-label={`Edit the ${budgetLabel(b, names)}`} onClick={() => setEditing(b)}>
            Edit
          </button>{" "}
          <button type="button" className="danger outline small" aria-label={`Delete the ${budgetLabel(b, names)}`} onClick={() => (remove.reset(), setDeleting(b))}>
            Delete
          </button>
        </span>
      ),
    });
  return (
    <section aria-labelledby="budgets-title">
      <h2 id="budgets-title">The organization's budgets</h2>
      <QueryView
        query={budgets}
        isEmpty={(d) => d.data.length === 0}
        empty={manage ? "No budgets yet. Create one to cap what the organization, a member or a key spends per day, week or month." : "This organization has no budgets."}
      >
        {(d) => <DataTable columns={columns} rows={d.data} rowKey={(b) => b.id} />}
      </QueryView>
      <p>
        <small>
          Spent: what live calls hold or were charged in the current window. Every budget that applies to a call counts it; a block budget refuses
          a call that would pass it.
        </small>
      </p>
      <EditBudgetDialog editing={editing} onClose={() => setEditing(null)} names={names} />
      <ConfirmDialog
        open={deleting !== null}
        title="Delete this budget?"
        confirmLabel="Delete budget"
        busy={remove.isPending}
        onCancel={() => setDeleting(null)}
        onConfirm={() => deleting && remove.mutate(deleting)}
      >
        <p>
          {deleting && <strong>The {budgetLabel(deleting, names)}</strong>}{" "}
          {deleting?.source === "key_spend_limit" ? "is the key's spend limit: the key will have no limit." : "stops counting and limiting at once."}
        </p>
        {remove.isError && <ErrorNotice error={remove.error} />}
      </ConfirmDialog>
    </section>
  );
}

/** What a role below admin sees instead of the create button. */
function ReadOnly({ role }: { role: Role }) {
  return <p className="notice">Budgets are set by this organization's admins and owners; your role is {role}, so you can read them.</p>;
}

export default function Budgets() {
  const role = useRole();
  const manage = can(role, "budgets");
  const names = useNames();
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div className="page-intro">
        <p className="lead">Budgets cap spend per day, week, month or in total, for the whole organization, one member or one key, in the time zone you choose.</p>
        {!creating && manage && (
          <button type="button" className="page-action" onClick={() => setCreating(true)}>
            Create budget
          </button>
        )}
      </div>
      <BudgetList manage={manage} names={names} />
      {!manage && role !== undefined && <ReadOnly role={role} />}
      <CreateBudgetDialog open={creating} onClose={() => setCreating(false)} names={names} />
    </>
  );
}
