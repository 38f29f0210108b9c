/**
 * The organization switcher of the sidebar (D41), shown when signed in: the user's organizations
 * (`GET /v1/orgs`, with the user's role in each) in a labelled select, the role in the selected one, and
 * "New organization" (`POST /v1/orgs {name}`, a dialog; the new organization is selected at once).
 * Choosing one remembers it (org.ts) and app.tsx resets the query cache, so every page shows that
 * organization's balance, keys, usage, ledger, jobs and webhooks: api.ts sends it as `X-Svc-Org`.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api, unwrap } from "../api.ts";
import { selectOrg, useSelectedOrg } from "../org.ts";
import { useModalDialog } from "./ConfirmDialog.tsx";
import { ErrorNotice } from "./states.tsx";

type Org = Awaited<ReturnType<typeof listOrgs>>["data"][number];

function listOrgs() {
  return unwrap(api.GET("/v1/orgs"));
}

/** The name an organization shows (a personal one is named after its owner's email; an unnamed one by id). */
export function orgLabel(o: Pick<Org, "id" | "name">): string {
  return o.name ?? o.id;
}

/** The user's organizations (`GET /v1/orgs`), cached under `["orgs"]`. */
export function useOrgs() {
  return useQuery({ queryKey: ["orgs"], queryFn: listOrgs });
}

/**
 * The organization the console acts for: the selected one, else the gateway's default (the one
 * `GET /v1/auth/me` names), with the caller's role in it; undefined while loading.
 */
export function useActiveOrg(): Org | undefined {
  const selected = useSelectedOrg();
  const orgs = useOrgs();
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")), enabled: selected === null });
  const id = selected ?? me.data?.org_id;
  return id === undefined ? undefined : orgs.data?.data.find((o) => o.id === id);
}

function NewOrgDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const ref = useModalDialog(open);
  return (
    <dialog ref={ref} aria-labelledby="new-org-title" onCancel={(e) => (e.preventDefault(), onClose())}>
      {open && <NewOrgForm onClose={onClose} />}
    </dialog>
  );
}

function NewOrgForm({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/orgs", { body: { name: name.trim() } })),
    onSuccess: (org) => {
      // Selecting it resets every query (app.tsx), the list of organizations included.
      queryClient.setQueryData(["orgs"], (old: { object: "list"; data: Org[] } | undefined) => (old ? { ...old, data: [...old.data, org] } : old));
      selectOrg(org.id);
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <article>
      <h2 id="new-org-title">New organization</h2>
      <p>
        A team's shared balance, keys and usage. You are its owner; invite members on its Members page. It starts with a balance of $0: top it up
        or ask the operator for a deposit.
      </p>
      <form onSubmit={submit}>
        <label htmlFor="new-org-name">Organization name</label>
        <input id="new-org-name" type="text" required maxLength={100} placeholder="e.g. Acme studio" value={name} onChange={(e) => setName(e.target.value)} />
        {create.isError && <ErrorNotice error={create.error} />}
        <footer>
          <button type="button" className="secondary" onClick={onClose} disabled={create.isPending}>
            Cancel
          </button>
          <button type="submit" aria-busy={create.isPending} disabled={create.isPending || name.trim() === ""}>
            Create organization
          </button>
        </footer>
      </form>
    </article>
  );
}

/** The switcher block of the sidebar. */
export function OrgSwitcher() {
  const orgs = useOrgs();
  const active = useActiveOrg();
  const [creating, setCreating] = useState(false);
  return (
    <div className="org-switcher">
      <label htmlFor="org-switcher">Organization</label>
      <select
        id="org-switcher"
        value={active?.id ?? ""}
        disabled={!orgs.data}
        aria-describedby="org-switcher-role"
        title={active ? orgLabel(active) : undefined}
        onChange={(e) => selectOrg(e.target.value || null)}
      >
        {!active && <option value="">{orgs.isError ? "Could not load" : "Loading…"}</option>}
        {orgs.data?.data.map((o) => (
          <option key={o.id} value={o.id}>
            {orgLabel(o)}
          </option>
        ))}
      </select>
      <p className="org-switcher-meta">
        <small id="org-switcher-role">{active ? `Your role: ${active.role}` : ""}</small>
        <button type="button" className="secondary outline small" onClick={() => setCreating(true)}>
          New organization
        </button>
      </p>
      <NewOrgDialog open={creating} onClose={() => setCreating(false)} />
    </div>
  );
}
