/**
 * Webhooks (D31): the account's endpoints (url, events, disabled, created), creating one (the `whsec_`
 * secret shown once), rotating an endpoint's secret (shown once), deleting one after a confirmation, and
 * the account's default secret (`GET /v1/webhooks/secret`, which signs a submit's `webhook_url`),
 * revealed on demand. The delivery log is its own page (webhooks-deliveries.tsx). Only admins and owners
 * manage webhooks (D41, roles.ts): the others see the list, without its actions.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { Link } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { ConfirmDialog } from "../components/ConfirmDialog.tsx";
import { CopyButton, SecretReveal } from "../components/CopyButton.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { ErrorNotice, QueryView } from "../components/states.tsx";
import { DateTime } from "../components/values.tsx";
import type { PageMeta } from "../pages.ts";
import { can, type Role, useRole } from "../roles.ts";

export const page: PageMeta = { path: "/webhooks", title: "Webhooks", group: "customer", order: 60, section: "integrate" };

type Endpoint = paths["/v1/webhooks"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type EventType = Endpoint["events"][number];

/** The event types (D31) and what each means. */
export const EVENT_TYPES: [EventType, string][] = [
  ["job.succeeded", "a job succeeded"],
  ["job.failed", "a job failed or was canceled"],
  ["job.refunded", "a job was refunded"],
  ["job.expired", "a job's outputs expired"],
  ["balance.low", "the balance fell below the threshold"],
];

function CreateEndpoint() {
  const queryClient = useQueryClient();
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<EventType[]>(EVENT_TYPES.map(([t]) => t));
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/webhooks", { body: { url: url.trim(), events } })),
    onSuccess: () => {
      setUrl("");
      void queryClient.invalidateQueries({ queryKey: ["webhooks"] });
    },
  });
  const toggle = (t: EventType, on: boolean) => setEvents(on ? EVENT_TYPES.map(([e]) => e).filter((e) => e === t || events.includes(e)) : events.filter((e) => e !== t));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <section aria-labelledby="create-webhook-title">
      <h2 id="create-webhook-title">Add an endpoint</h2>
      {create.isSuccess && (
        <SecretReveal label={`Signing secret of ${create.data.url}`} secret={create.data.secret}>
          <button type="button" className="secondary outline" onClick={() => create.reset()}>
            Done, hide it
          </button>
        </SecretReveal>
      )}
      <form onSubmit={submit}>
        <label htmlFor="webhook-url">Endpoint URL</label>
        <input
          id="webhook-url"
          type="url"
          required
          maxLength={2048}
          placeholder="https://example.com/hooks/gateway"
          value={url}
          onChange={(e) => setUrl(e.target.value)}
          aria-describedby="webhook-url-help"
        />
        <small id="webhook-url-help">An https:// address on the public internet. Deliveries are signed as Standard Webhooks.</small>
        <fieldset>
          <legend>Events</legend>
          {EVENT_TYPES.map(([t, what]) => (
            <label key={t}>
              <input type="checkbox" checked={events.includes(t)} onChange={(e) => toggle(t, e.target.checked)} />
              <code>{t}</code>: {what}
            </label>
          ))}
        </fieldset>
        {events.length === 0 && (
          <p role="alert" className="notice error">
            Choose at least one event.
          </p>
        )}
        {create.isError && <ErrorNotice error={create.error} />}
        <button type="submit" aria-busy={create.isPending} disabled={create.isPending || events.length === 0}>
          Add endpoint
        </button>
      </form>
    </section>
  );
}

function EndpointList({ manage }: { manage: boolean }) {
  const queryClient = useQueryClient();
  const endpoints = useQuery({ queryKey: ["webhooks"], queryFn: () => unwrap(api.GET("/v1/webhooks")) });
  const [deleting, setDeleting] = useState<Endpoint | null>(null);
  const remove = useMutation({
    mutationFn: (ep: Endpoint) => unwrap(api.DELETE("/v1/webhooks/{id}", { params: { path: { id: ep.id } } })),
    onSuccess: () => {
      setDeleting(null);
      void queryClient.invalidateQueries({ queryKey: ["webhooks"] });
    },
  });
  const rotate = useMutation({
    mutationFn: (ep: Endpoint) => unwrap(api.POST("/v1/webhooks/{id}/rotate-secret", { params: { path: { id: ep.id } } })).then((r) => ({ ...r, url: ep.url })),
  });
  const columns: Column<Endpoint>[] = [
    { header: "URL", cell: (ep) => <code>{ep.url}</code> },
    { header: "Events", cell: (ep) => (ep.events.length === EVENT_TYPES.length ? "all" : ep.events.join(", ")) },
    { header: "State", cell: (ep) => (ep.disabled ? <span className="status status-failed">disabled (answered 410)</span> : "active") },
    { header: "Created", cell: (ep) => <DateTime iso={ep.created_at} /> },
  ];
  if (manage)
    columns.push({
      header: "Actions",
      cell: (ep) => (
        <span className="actions">
          <button type="button" className="secondary outline small" aria-label={`Rotate the secret of ${ep.url}`} onClick={() => rotate.mutate(ep)} disabled={rotate.isPending}>
            Rotate secret
          </button>{" "}
          <button type="button" className="danger outline small" aria-label={`Delete ${ep.url}`} onClick={() => (remove.reset(), setDeleting(ep))}>
            Delete
          </button>
        </span>
      ),
    });
  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Endpoints</h2>
      {rotate.isError && <ErrorNotice error={rotate.error} />}
      {rotate.isSuccess && (
        <SecretReveal label={`New signing secret of ${rotate.data.url}`} secret={rotate.data.secret}>
          <p>The old secret no longer signs anything, retries of earlier events included.</p>
          <button type="button" className="secondary outline" onClick={() => rotate.reset()}>
            Done, hide it
          </button>
        </SecretReveal>
      )}
      <QueryView
        query={endpoints}
        isEmpty={(d) => d.data.length === 0}
        empty={manage ? "No endpoints yet. Add one below to receive job and balance events." : "No endpoints yet."}
      >
        {(d) => <DataTable columns={columns} rows={d.data} rowKey={(ep) => ep.id} />}
      </QueryView>
      <p>
        <Link to="/webhooks/deliveries">See the delivery log</Link>: every attempt, and sending an event again.
      </p>
      <ConfirmDialog
        open={deleting !== null}
        title="Delete this endpoint?"
        confirmLabel="Delete endpoint"
        busy={remove.isPending}
        onCancel={() => setDeleting(null)}
        onConfirm={() => deleting && remove.mutate(deleting)}
      >
        <p>
          {deleting && <strong>{deleting.url}</strong>} will receive nothing more; deliveries still pending for it end as failed. This cannot be
          undone.
        </p>
        {remove.isError && <ErrorNotice error={remove.error} />}
      </ConfirmDialog>
    </section>
  );
}

function DefaultSecret() {
  // Fetched only when asked for: the secret is not put on screen (or in the query cache) unprompted.
  const [shown, setShown] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  const secret = useQuery({ queryKey: ["webhook-secret"], queryFn: () => unwrap(api.GET("/v1/webhooks/secret")), enabled: shown, gcTime: 0, staleTime: 0 });
  return (
    <section aria-labelledby="default-secret-title">
      <h2 id="default-secret-title">Default secret</h2>
      <p>
        Signs the deliveries to a <code>webhook_url</code> given with a job submit, instead of a registered endpoint.
      </p>
      {shown ? (
        <QueryView query={secret}>
          {(s) => (
            <>
              <label htmlFor="default-secret">Default signing secret</label>
              <div role="group" className="secret-row">
                <input id="default-secret" ref={field} type="text" readOnly value={s.secret} spellCheck={false} autoComplete="off" onFocus={(e) => e.currentTarget.select()} />
                <CopyButton text={s.secret} fallback={() => field.current} />
              </div>
              <button type="button" className="secondary outline" onClick={() => setShown(false)}>
                Hide it
              </button>
            </>
          )}
        </QueryView>
      ) : (
        <button type="button" className="secondary" onClick={() => setShown(true)}>
          Reveal the default secret
        </button>
      )}
    </section>
  );
}

/** What a role below admin sees instead of the forms. */
function ManagedByAdmins({ role }: { role: Role }) {
  return <p className="notice">Webhook endpoints and secrets are managed by this organization's admins and owners; your role is {role}.</p>;
}

export default function Webhooks() {
  const role = useRole();
  const manage = can(role, "webhooks");
  return (
    <>
      <EndpointList manage={manage} />
      {manage && <CreateEndpoint />}
      {manage && <DefaultSecret />}
      {!manage && role !== undefined && <ManagedByAdmins role={role} />}
    </>
  );
}
