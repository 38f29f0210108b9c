/**
 * API keys (D8, D32): the list with mode, prefix and dates; create one with a name and a mode (the secret
 * shown once, with a copy button); revoke one after a confirmation.
 *
 * TODO(issue 16, D34): per-key spend limit (`spend_limit_usd`, `spend_limit_period`), expiry (`expires_at`),
 * model allow-list (`models`) and `rpm`, and `spent_usd` in the list. The server does not accept or return
 * them yet; add the fields to the create form and the columns here once `POST /v1/auth/keys` and
 * `GET /v1/auth/keys` document them (the typed client will then have them).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { api, type paths, unwrap } from "../api.ts";
import { ConfirmDialog } from "../components/ConfirmDialog.tsx";
import { SecretReveal } from "../components/CopyButton.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { ErrorNotice, QueryView } from "../components/states.tsx";
import { DateTime } from "../components/values.tsx";
import type { PageMeta } from "../pages.ts";

export const page: PageMeta = { path: "/keys", title: "API keys", navLabel: "Keys", group: "customer", order: 20 };

type Key = paths["/v1/auth/keys"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type Mode = Key["mode"];

function keyLabel(k: Pick<Key, "name" | "prefix">): string {
  return k.name ? `${k.name} (${k.prefix}…)` : `${k.prefix}…`;
}

function CreateKey() {
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [mode, setMode] = useState<Mode>("live");
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/auth/keys", { body: { name: name.trim() || null, mode } })),
    onSuccess: () => {
      setName("");
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <section aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create a key</h2>
      {create.isSuccess && (
        <SecretReveal label={`New ${create.data.mode} key${create.data.name ? ` “${create.data.name}”` : ""}`} secret={create.data.api_key}>
          <button type="button" className="secondary outline" onClick={() => create.reset()}>
            Done, hide it
          </button>
        </SecretReveal>
      )}
      <form onSubmit={submit}>
        <div className="grid">
          <div>
            <label htmlFor="key-name">Name</label>
            <input id="key-name" type="text" maxLength={64} placeholder="e.g. production server" value={name} onChange={(e) => setName(e.target.value)} />
          </div>
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
        </div>
        {create.isError && <ErrorNotice error={create.error} />}
        <button type="submit" aria-busy={create.isPending} disabled={create.isPending}>
          Create key
        </button>
      </form>
    </section>
  );
}

function KeyList() {
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => unwrap(api.GET("/v1/auth/keys")) });
  const [revoking, setRevoking] = useState<Key | null>(null);
  const revoke = useMutation({
    mutationFn: (k: Key) => unwrap(api.DELETE("/v1/auth/keys/{key_id}", { params: { path: { key_id: k.key_id } } })),
    onSuccess: () => {
      setRevoking(null);
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  const columns: Column<Key>[] = [
    { header: "Name", cell: (k) => k.name ?? <em>unnamed</em> },
    { header: "Key", cell: (k) => <code>{k.prefix}…</code> },
    { header: "Mode", cell: (k) => <span className={`mode mode-${k.mode}`}>{k.mode}</span> },
    { header: "Created", cell: (k) => <DateTime iso={k.created_at} /> },
    { header: "Last used", cell: (k) => (k.last_used_at ? <DateTime iso={k.last_used_at} /> : "never") },
    {
      header: "Actions",
      cell: (k) => (
        <button type="button" className="danger outline small" aria-label={`Revoke ${keyLabel(k)}`} onClick={() => (revoke.reset(), setRevoking(k))}>
          Revoke
        </button>
      ),
    },
  ];
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">Your keys</h2>
      <QueryView query={keys} isEmpty={(d) => d.data.length === 0} empty="No keys. Create one above.">
        {(d) => <DataTable columns={columns} rows={d.data} rowKey={(k) => k.key_id} />}
      </QueryView>
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
  return (
    <>
      <CreateKey />
      <KeyList />
    </>
  );
}
