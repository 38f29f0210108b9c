/**
 * The organization switcher of the sidebar (D41), shown when signed in: a button naming the organization
 * the console acts for, in full (a long name wraps instead of being cut, issue 42), with the user's role
 * under it; it opens a list of the user's organizations (`GET /v1/orgs`: each name in full, the role,
 * personal or not, the member count), "All organizations" (the organizations page) and "New organization"
 * (`POST /v1/orgs {name}`, a dialog; the new organization is selected at once). Escape, a click outside or a
 * choice closes the list. Choosing one remembers it (org.ts) and app.tsx resets the query cache, so every
 * page shows that organization's balance, keys, usage, ledger, jobs and webhooks: api.ts sends it as
 * `X-Svc-Org`.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, Fragment, useEffect, useRef, useState } from "react";
import { Link, useLocation } from "react-router";
import { api, unwrap } from "../api.ts";
import { plural } from "../format.ts";
import { selectOrg, useSelectedOrg } from "../org.ts";
import { useModalDialog } from "./ConfirmDialog.tsx";
import { ErrorNotice } from "./states.tsx";

/** One organization as `GET /v1/orgs` lists it (with the user's role, `member_count` and `personal`). */
export type Org = Awaited<ReturnType<typeof listOrgs>>["data"][number];

function listOrgs() {
  return unwrap(api.GET("/v1/orgs"));
}

/**
 * An organization's name with line-break opportunities after `@`, `.`, `_` and `-`, so a personal
 * organization's email wraps as `shots@` / `example.com` rather than in the middle of a word (CSS
 * `overflow-wrap: anywhere` remains the fallback for a long unbroken name).
 */
export function BreakableName({ text }: { text: string }) {
  const parts = text.split(/(?<=[@._-])/);
  return (
    <>
      {parts.map((p, i) => (
        <Fragment key={i}>
          {i > 0 && <wbr />}
          {p}
        </Fragment>
      ))}
    </>
  );
}

/** The name an organization shows (a personal one is named after its owner's email; an unnamed one by id). */
export function orgLabel(o: Pick<Org, "id" | "name">): string {
  return o.name ?? o.id;
}

/** What an organization is, in a few words: `owner · personal · 1 member`. */
export function orgFacts(o: Pick<Org, "role" | "personal" | "member_count">): string {
  return [o.role, o.personal ? "personal" : null, plural(o.member_count, "member")].filter((x) => x !== null).join(" · ");
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

/** The "New organization" dialog (the switcher's list and the organizations page open it). */
export function NewOrgDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
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
  const location = useLocation();
  const [creating, setCreating] = useState(false);
  // The list is open on the page where it was opened: a navigation closes it.
  const [openAt, setOpenAt] = useState<string | null>(null);
  const open = openAt === location.pathname;
  const box = useRef<HTMLDivElement>(null);
  const toggle = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpenAt(null);
      toggle.current?.focus();
    };
    const onPointer = (e: PointerEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpenAt(null);
    };
    window.addEventListener("keydown", onKey);
    window.addEventListener("pointerdown", onPointer);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("pointerdown", onPointer);
    };
  }, [open]);
  const choose = (id: string) => {
    setOpenAt(null);
    selectOrg(id);
    toggle.current?.focus();
  };
  const name = active ? orgLabel(active) : orgs.isError ? "Could not load" : "Loading…";
  return (
    <div className="org-switcher" ref={box}>
      <button
        ref={toggle}
        type="button"
        className="org-current"
        aria-expanded={open}
        aria-controls="org-menu"
        aria-describedby="org-switcher-role"
        disabled={!orgs.data}
        title={active ? orgLabel(active) : undefined}
        onClick={() => setOpenAt(open ? null : location.pathname)}
      >
        <span className="org-current-label">Organization</span>
        <span className="org-current-name">
          <BreakableName text={name} />
        </span>
      </button>
      <small id="org-switcher-role" className="org-switcher-role">
        {active ? `Your role: ${active.role}` : ""}
      </small>
      {open && orgs.data && (
        // Not role="group": Pico draws a group as one joined row of controls.
        <div id="org-menu" className="org-menu">
          <ul aria-label="Switch organization">
            {orgs.data.data.map((o) => (
              <li key={o.id}>
                <button
                  type="button"
                  className="org-choice"
                  aria-current={o.id === active?.id ? "true" : undefined}
                  aria-label={`${orgLabel(o)} (${orgFacts(o)})`}
                  onClick={() => choose(o.id)}
                >
                  <span className="org-choice-name">
                    <BreakableName text={orgLabel(o)} />
                  </span>
                  <small>{orgFacts(o)}</small>
                </button>
              </li>
            ))}
          </ul>
          <p className="org-menu-actions">
            <Link to="/organizations">All organizations</Link>
            <button type="button" className="secondary outline small" onClick={() => (setOpenAt(null), setCreating(true))}>
              New organization
            </button>
          </p>
        </div>
      )}
      <NewOrgDialog open={creating} onClose={() => setCreating(false)} />
    </div>
  );
}
