/**
 * Webhook deliveries (D31, `GET /v1/webhooks/deliveries`): one row per event and destination, newest
 * first, with every attempt (when, status code, duration, error) and the next retry in its status; filtered by event
 * type and status (kept in the URL with the page cursor). A delivery can be sent again now
 * (`POST /v1/webhooks/deliveries/{id}/replay`, same `webhook-id`).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type paths, unwrap } from "../api.ts";
import { type Column, DataTable, CursorPager } from "../components/DataTable.tsx";
import { FilterSelect } from "../components/FilterSelect.tsx";
import { ErrorNotice, QueryView } from "../components/states.tsx";
import { useCursor, useUrlFilters } from "../components/url-state.ts";
import { DateTime } from "../components/values.tsx";
import { formatCount } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { EVENT_TYPES } from "./webhooks.tsx";
import { can, useRole } from "../roles.ts";

export const page: PageMeta = { path: "/webhooks/deliveries", title: "Webhook deliveries", navLabel: "Deliveries", group: "customer", order: 61, section: "integrate" };

type Query = NonNullable<paths["/v1/webhooks/deliveries"]["get"]["parameters"]["query"]>;
type Delivery = paths["/v1/webhooks/deliveries"]["get"]["responses"][200]["content"]["application/json"]["data"][number];
type Attempt = Delivery["attempts"][number];

const STATUSES: NonNullable<Query["status"]>[] = ["pending", "succeeded", "failed"];

function AttemptList({ attempts }: { attempts: Attempt[] }) {
  if (attempts.length === 0) return <span>none yet</span>;
  return (
    <ol className="attempts">
      {attempts.map((a, i) => (
        <li key={i}>
          {a.status_code === null ? "no answer" : `HTTP ${a.status_code}`} in {formatCount(a.duration_ms)} ms
          {/* `http_500` says nothing the status code did not. */}
          {a.error !== null && a.error !== `http_${a.status_code}` && (
            <>
              {" "}
              (<code>{a.error}</code>)
            </>
          )}
          <br />
          <small>
            <DateTime iso={a.at} />
          </small>
        </li>
      ))}
    </ol>
  );
}

export default function WebhookDeliveries() {
  const queryClient = useQueryClient();
  const [filters, setFilters] = useUrlFilters({ event_type: "", status: "" });
  const cursor = useCursor();
  const query: Query = {
    limit: "20",
    ...(cursor.after ? { after: cursor.after } : {}),
    ...(filters.event_type ? { event_type: filters.event_type as Query["event_type"] } : {}),
    ...(filters.status ? { status: filters.status as Query["status"] } : {}),
  };
  const deliveries = useQuery({ queryKey: ["webhook-deliveries", query], queryFn: () => unwrap(api.GET("/v1/webhooks/deliveries", { params: { query } })) });
  const replay = useMutation({
    mutationFn: (d: Delivery) => unwrap(api.POST("/v1/webhooks/deliveries/{id}/replay", { params: { path: { id: d.id } } })).then(() => d),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["webhook-deliveries"] }),
  });
  // Replays are the admins' and owners' (D41).
  const mayReplay = can(useRole(), "webhooks");
  const columns: Column<Delivery>[] = [
    { header: "Created", cell: (d) => <DateTime iso={d.created_at} /> },
    { header: "Event", cell: (d) => <code>{d.event_type}</code> },
    { header: "Destination", cell: (d) => <code>{d.url}</code> },
    {
      header: "Status",
      cell: (d) => (
        <>
          <span className={`status status-${d.status}`}>{d.status}</span>
          {d.next_attempt_at && (
            <small>
              {" "}
              next attempt <DateTime iso={d.next_attempt_at} />
            </small>
          )}
        </>
      ),
    },
    { header: "Attempts", cell: (d) => <AttemptList attempts={d.attempts} /> },
  ];
  if (mayReplay)
    columns.push({
      header: "Actions",
      cell: (d) => (
        <button
          type="button"
          className="secondary outline small"
          aria-label={`Replay ${d.event_type} ${d.event_id} to ${d.url}`}
          onClick={() => replay.mutate(d)}
          disabled={replay.isPending}
        >
          Replay
        </button>
      ),
    });
  return (
    <>
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <FilterSelect
          id="delivery-event"
          label="Event type"
          anyLabel="All events"
          value={filters.event_type}
          options={EVENT_TYPES.map(([t]) => t)}
          onChange={(v) => setFilters({ event_type: v })}
        />
        <FilterSelect id="delivery-status" label="Status" anyLabel="Any status" value={filters.status} options={STATUSES} onChange={(v) => setFilters({ status: v })} />
      </form>
      {replay.isError && <ErrorNotice error={replay.error} />}
      {replay.isSuccess && (
        <p role="status" className="notice success">
          {replay.data.event_type} {replay.data.event_id} is being sent again to {replay.data.url}.
        </p>
      )}
      <QueryView
        query={deliveries}
        isEmpty={(d) => d.data.length === 0}
        empty={filters.event_type || filters.status ? "No deliveries match these filters." : "No deliveries yet: events are sent when jobs end."}
      >
        {(d) => (
          <>
            <DataTable columns={columns} rows={d.data} rowKey={(x) => x.id} />
            <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
          </>
        )}
      </QueryView>
    </>
  );
}
