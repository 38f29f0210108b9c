/**
 * API keys (D8, D32, D34): the list with mode, prefix, the controls (spend limit and what the key spent in
 * its period, expiry, model allow-list, rpm) and dates; create one with a name, a mode and optional
 * controls (the secret shown once, with a copy button); edit a key's name and controls in a dialog
 * (`PATCH /v1/auth/keys/{id}` with the changed fields only; an emptied field clears it); revoke one after a
 * confirmation. A refused field (the D1 `error.param`) shows its message under that field. The keys are the
 * selected organization's (D41): a viewer creates none, a member edits and revokes only the keys they
 * made, admins and owners every key (roles.ts); the actions a role lacks are not shown.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { ConfirmDialog, useModalDialog } from "../components/ConfirmDialog.tsx";
import { SecretReveal } from "../components/CopyButton.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { FieldError, fieldErrors, type FormErrors, OtherError } from "../components/FieldError.tsx";
import { ErrorNotice, QueryView } from "../components/states.tsx";
import { DateTime, Usd } from "../components/values.tsx";
import { formatCount } from "../format.ts";
import {
  fromLocalInput,
  modelsText,
  parseModels,
  parseNumberInput,
  periodPhrase,
  SPEND_PERIODS,
  type SpendPeriod,
  toLocalInput,
} from "../key-controls.ts";
import type { PageMeta } from "../pages.ts";
import { can, canManageKey, useRole } from "../roles.ts";
import { useSession } from "../session.ts";

export const page: PageMeta = { path: "/keys", title: "API keys", navLabel: "Keys", group: "customer", order: 45, section: "build" };

type Key = paths["/v1/auth/keys"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type Mode = Key["mode"];
type PatchBody = NonNullable<paths["/v1/auth/keys/{key_id}"]["patch"]["requestBody"]>["content"]["application/json"];

/** The fields of the create and edit forms, by their request names (the D1 `param` of a refusal). */
const FIELDS = ["name", "mode", "spend_limit_usd", "spend_limit_period", "expires_at", "models", "rpm"] as const;

function keyLabel(k: Pick<Key, "name" | "prefix">): string {
  return k.name ? `${k.name} (${k.prefix}…)` : `${k.prefix}…`;
}

/** What the control fields hold, as typed. */
interface Draft {
  name: string;
  spendLimit: string;
  period: SpendPeriod;
  expires: string;
  models: string;
  rpm: string;
}

const EMPTY_DRAFT: Draft = { name: "", spendLimit: "", period: "month", expires: "", models: "", rpm: "" };

/** The fields of a key as its edit form starts. */
function draftOf(k: Key): Draft {
  return {
    name: k.name ?? "",
    spendLimit: k.spend_limit_usd === null ? "" : String(k.spend_limit_usd),
    period: k.spend_limit_period,
    expires: toLocalInput(k.expires_at),
    models: modelsText(k.models),
    rpm: k.rpm === null ? "" : String(k.rpm),
  };
}

/** The account's requests per minute (`GET /v1/auth/limits`, cached with the overview's), the ceiling of a key's. */
function useAccountRpm(): number | undefined {
  const limits = useQuery({ queryKey: ["limits"], queryFn: () => unwrap(api.GET("/v1/auth/limits")) });
  return limits.data?.rpm;
}

/** The control fields (spend limit and period, expiry, models, rpm), shared by the create and edit forms. */
function ControlFields({ idPrefix, draft, set, errors }: { idPrefix: string; draft: Draft; set: (d: Partial<Draft>) => void; errors: FormErrors }) {
  const accountRpm = useAccountRpm();
  const id = (f: string) => `${idPrefix}-${f}`;
  return (
    <fieldset>
      <legend>Controls (optional)</legend>
      <div className="grid">
        <div>
          <label htmlFor={id("spend-limit")}>Spend limit (USD)</label>
          <input
            id={id("spend-limit")}
            type="number"
            min={0}
            step="any"
            inputMode="decimal"
            placeholder="no limit"
            value={draft.spendLimit}
            onChange={(e) => set({ spendLimit: e.target.value })}
            {...errors.input("spend_limit_usd", id("spend-limit-help"))}
          />
          <small id={id("spend-limit-help")}>Calls that would go past it are refused (402). Empty: no limit.</small>
          <FieldError errors={errors} field="spend_limit_usd" />
        </div>
        <div>
          <label htmlFor={id("period")}>Limit period</label>
          <select
            id={id("period")}
            value={draft.period}
            onChange={(e) => set({ period: e.target.value as SpendPeriod })}
            {...errors.input("spend_limit_period", id("period-help"))}
          >
            {SPEND_PERIODS.map(([p, label]) => (
              <option key={p} value={p}>
                {label}
              </option>
            ))}
          </select>
          <small id={id("period-help")}>Days, weeks (from Monday) and months in UTC.</small>
          <FieldError errors={errors} field="spend_limit_period" />
        </div>
      </div>
      <div className="grid">
        <div>
          <label htmlFor={id("expires")}>Expires at</label>
          <input
            id={id("expires")}
            type="datetime-local"
            value={draft.expires}
            onChange={(e) => set({ expires: e.target.value })}
            {...errors.input("expires_at", id("expires-help"))}
          />
          <small id={id("expires-help")}>In your time zone. Empty: never.</small>
          <FieldError errors={errors} field="expires_at" />
        </div>
        <div>
          <label htmlFor={id("rpm")}>Requests per minute</label>
          <input
            id={id("rpm")}
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            placeholder="the account's"
            value={draft.rpm}
            onChange={(e) => set({ rpm: e.target.value })}
            {...errors.input("rpm", id("rpm-help"))}
          />
          <small id={id("rpm-help")}>
            At most the account's{accountRpm !== undefined ? ` (${formatCount(accountRpm)})` : ""}. Empty: only the account's limit.
          </small>
          <FieldError errors={errors} field="rpm" />
        </div>
      </div>
      <label htmlFor={id("models")}>Allowed models</label>
      <input
        id={id("models")}
        type="text"
        spellCheck={false}
        autoComplete="off"
        placeholder="all models"
        value={draft.models}
        onChange={(e) => set({ models: e.target.value })}
        {...errors.input("models", id("models-help"))}
      />
      <small id={id("models-help")}>
        Model ids or prefixes, separated by commas: <code>txtA-large, imgA-*</code>. Empty: every model. The ids are on the{" "}
        <Link to="/pricing">price list</Link>.
      </small>
      <FieldError errors={errors} field="models" />
    </fieldset>
  );
}

type CreatedKey = paths["/v1/auth/keys"]["post"]["responses"][201]["content"]["application/json"];

/**
 * The create form in a modal dialog, opened by the page's "Create key" button: name, mode and optional
 * controls. On success the dialog closes and the page shows the secret once (`onCreated`); a refusal
 * stays in the dialog, under the field it names.
 */
function CreateKeyDialog({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (key: CreatedKey) => void }) {
  const ref = useModalDialog(open);
  return (
    <dialog ref={ref} aria-labelledby="create-key-title" onCancel={(e) => (e.preventDefault(), onClose())}>
      {/* A fresh form (and mutation state) each time the dialog opens. */}
      {open && <CreateKeyForm onClose={onClose} onCreated={onCreated} />}
    </dialog>
  );
}

function CreateKeyForm({ onClose, onCreated }: { onClose: () => void; onCreated: (key: CreatedKey) => void }) {
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<Mode>("live");
  const [draft, setDraft] = useState<Draft>(EMPTY_DRAFT);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/v1/auth/keys", {
          body: {
            name: draft.name.trim() || null,
            mode,
            spend_limit_usd: parseNumberInput(draft.spendLimit),
            spend_limit_period: draft.period,
            expires_at: fromLocalInput(draft.expires),
            models: parseModels(draft.models),
            rpm: parseNumberInput(draft.rpm),
          },
        }),
      ),
    onSuccess: (data) => {
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
      onCreated(data);
    },
  });
  const errors = fieldErrors(create.error, FIELDS, "create-key");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <article>
      <h2 id="create-key-title">Create a key</h2>
      <form onSubmit={submit} aria-labelledby="create-key-title">
        <label htmlFor="key-name">Name</label>
        <input
          id="key-name"
          type="text"
          maxLength={64}
          placeholder="e.g. production server"
          value={draft.name}
          onChange={(e) => setDraft({ ...draft, name: e.target.value })}
          {...errors.input("name")}
        />
        <FieldError errors={errors} field="name" />
        <fieldset>
          <legend>Mode</legend>
          <label>
            <input type="radio" name="key-mode" value="live" checked={mode === "live"} onChange={() => setMode("live")} />
            Live: real calls, charged to the balance
          </label>
          <label>
            <input type="radio" name="key-mode" value="test" checked={mode === "test"} onChange={() => setMode("test")} />
            Test: simulated calls, no money moves
          </label>
        </fieldset>
        <ControlFields idPrefix="create-key" draft={draft} set={(d) => setDraft({ ...draft, ...d })} errors={errors} />
        <OtherError errors={errors} />
        <footer>
          <button type="button" className="secondary" onClick={onClose} disabled={create.isPending}>
            Cancel
          </button>
          <button type="submit" aria-busy={create.isPending} disabled={create.isPending}>
            Create key
          </button>
        </footer>
      </form>
    </article>
  );
}

/** The fields of `draft` that differ from `key`, as a PATCH body (an emptied field is null: cleared). */
function changes(key: Key, draft: Draft): PatchBody {
  const body: PatchBody = {};
  const name = draft.name.trim() || null;
  if (name !== key.name) body.name = name;
  const limit = parseNumberInput(draft.spendLimit);
  if (limit !== key.spend_limit_usd) body.spend_limit_usd = limit;
  if (draft.period !== key.spend_limit_period) body.spend_limit_period = draft.period;
  // The field shows the expiry to the minute: an untouched field keeps the exact instant.
  if (draft.expires !== toLocalInput(key.expires_at)) body.expires_at = fromLocalInput(draft.expires);
  const models = parseModels(draft.models);
  if (modelsText(models) !== modelsText(key.models)) body.models = models;
  const rpm = parseNumberInput(draft.rpm);
  if (rpm !== key.rpm) body.rpm = rpm;
  return body;
}

/** The edit form of `editing` in a modal dialog; closes on save (or when nothing changed) and on cancel. */
function EditKeyDialog({ editing, onClose }: { editing: Key | null; onClose: () => void }) {
  const ref = useModalDialog(editing !== null);
  return (
    <dialog ref={ref} aria-labelledby="edit-key-title" onCancel={(e) => (e.preventDefault(), onClose())}>
      {/* Keyed by the key: a fresh form (and mutation state) for each key edited. */}
      {editing && <EditKeyForm key={editing.key_id} k={editing} onClose={onClose} />}
    </dialog>
  );
}

function EditKeyForm({ k, onClose }: { k: Key; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState<Draft>(() => draftOf(k));
  const save = useMutation({
    mutationFn: (body: PatchBody) => unwrap(api.PATCH("/v1/auth/keys/{key_id}", { params: { path: { key_id: k.key_id } }, body })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
      onClose();
    },
  });
  const errors = fieldErrors(save.error, FIELDS, "edit-key");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = changes(k, draft);
    if (Object.keys(body).length === 0) onClose();
    else save.mutate(body);
  };
  return (
    <article>
      <h2 id="edit-key-title">Edit {keyLabel(k)}</h2>
      <form onSubmit={submit}>
        <label htmlFor="edit-key-name">Name</label>
        <input id="edit-key-name" type="text" maxLength={64} value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} {...errors.input("name")} />
        <FieldError errors={errors} field="name" />
        <ControlFields idPrefix="edit-key" draft={draft} set={(d) => setDraft({ ...draft, ...d })} errors={errors} />
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

/** What a key spent in its period, against its limit when it has one (a progress bar). */
function KeySpend({ k }: { k: Key }) {
  const phrase = periodPhrase(k.spend_limit_period);
  if (k.spend_limit_usd === null) {
    return (
      <span>
        <Usd amount={k.spent_usd} /> {phrase}
        <br />
        <small>no limit</small>
      </span>
    );
  }
  const limit = k.spend_limit_usd;
  const over = k.spent_usd >= limit;
  return (
    <span className="key-spend">
      <span>
        <Usd amount={k.spent_usd} /> of <Usd amount={limit} /> {phrase}
      </span>
      <progress
        value={limit === 0 ? 1 : Math.min(k.spent_usd, limit)}
        max={limit === 0 ? 1 : limit}
        aria-label={`Spent of the limit of ${keyLabel(k)}`}
        className={over ? "over" : undefined}
      />
      {over && <small className="status status-failed">limit reached</small>}
    </span>
  );
}

function KeyExpiry({ k, now }: { k: Key; now: number }) {
  if (k.expires_at === null) return <>never</>;
  if (Date.parse(k.expires_at) <= now) {
    return (
      <span>
        <span className="status status-expired">expired</span> <DateTime iso={k.expires_at} />
      </span>
    );
  }
  return <DateTime iso={k.expires_at} />;
}

function KeyList() {
  const queryClient = useQueryClient();
  const role = useRole();
  const { userId } = useSession();
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => unwrap(api.GET("/v1/auth/keys")) });
  const [revoking, setRevoking] = useState<Key | null>(null);
  const [editing, setEditing] = useState<Key | null>(null);
  const revoke = useMutation({
    mutationFn: (k: Key) => unwrap(api.DELETE("/v1/auth/keys/{key_id}", { params: { path: { key_id: k.key_id } } })),
    onSuccess: () => {
      setRevoking(null);
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  // "Expired" is judged at the time of the list's answer.
  const now = keys.dataUpdatedAt;
  const columns: Column<Key>[] = [
    {
      header: "Key",
      cell: (k) => (
        <span className="key-name">
          {k.name ?? <em>unnamed</em>}
          <span>
            <code>{k.prefix}…</code> <span className={`mode mode-${k.mode}`}>{k.mode}</span>
          </span>
        </span>
      ),
    },
    { header: "Spent", cell: (k) => <KeySpend k={k} /> },
    { header: "Expires", cell: (k) => <KeyExpiry k={k} now={now} /> },
    { header: "Models", cell: (k) => (k.models === null ? "all" : <span className="key-models">{k.models.map((m) => <code key={m}>{m}</code>)}</span>) },
    { header: "Rpm", numeric: true, cell: (k) => (k.rpm === null ? <small>account's</small> : formatCount(k.rpm)) },
    {
      header: "Last used",
      cell: (k) => (
        <span className="key-dates">
          {k.last_used_at ? <DateTime iso={k.last_used_at} /> : "never"}
          <small>
            created <DateTime iso={k.created_at} />
          </small>
        </span>
      ),
    },
    {
      header: "Actions",
      cell: (k) =>
        !canManageKey(role, userId, k.created_by) ? (
          <small>{role === undefined ? "" : k.created_by === userId ? "read only" : "another member's key"}</small>
        ) : (
          <span className="actions">
            <button type="button" className="secondary outline small" aria-label={`Edit ${keyLabel(k)}`} onClick={() => setEditing(k)}>
              Edit
            </button>{" "}
            <button type="button" className="danger outline small" aria-label={`Revoke ${keyLabel(k)}`} onClick={() => (revoke.reset(), setRevoking(k))}>
              Revoke
            </button>
          </span>
        ),
    },
  ];
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">The organization's keys</h2>
      <QueryView query={keys} isEmpty={(d) => d.data.length === 0} empty={
          can(role, "createKey") || role === undefined
            ? "No keys yet. Create one to call the API; a test key makes simulated calls and moves no money."
            : "This organization has no keys yet."
        }>
        {(d) => <DataTable columns={columns} rows={d.data} rowKey={(k) => k.key_id} />}
      </QueryView>
      <p>
        <small>Spent: what the key's live calls hold or were charged in the current period (test keys move no money).</small>
      </p>
      <EditKeyDialog editing={editing} onClose={() => setEditing(null)} />
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke this key?"
        confirmLabel="Revoke key"
        busy={revoke.isPending}
        onCancel={() => setRevoking(null)}
        onConfirm={() => revoking && revoke.mutate(revoking)}
      >
        <p>
          {revoking && <strong>{keyLabel(revoking)}</strong>} stops working at once: every call made with it will be refused. This cannot be
          undone.
        </p>
        {revoke.isError && <ErrorNotice error={revoke.error} />}
      </ConfirmDialog>
    </section>
  );
}

export default function Keys() {
  const role = useRole();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  return (
    <>
      <div className="page-intro">
        <p className="lead">Keys authenticate your API calls. A live key spends your balance; a test key gets simulated answers and moves no money.</p>
        {/* Hidden while the dialog is open: its form has the "Create key" button then. */}
        {!creating && can(role, "createKey") && (
          <button type="button" className="page-action" onClick={() => (setCreated(null), setCreating(true))}>
            Create key
          </button>
        )}
      </div>
      {created && (
        <SecretReveal label={`New ${created.mode} key${created.name ? ` “${created.name}”` : ""}`} secret={created.api_key}>
          <button type="button" className="secondary outline" onClick={() => setCreated(null)}>
            Done, hide it
          </button>
        </SecretReveal>
      )}
      <KeyList />
      <CreateKeyDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(k) => {
          setCreated(k);
          setCreating(false);
        }}
      />
    </>
  );
}
