/**
 * The account's jobs (D30: `GET /v1/jobs?limit&after&status&kind&model`, newest first, with a session
 * token): a cursor-paged table filtered by status, kind and model, the filters and the cursor in the URL.
 * Jobs that have not ended are followed live on their events stream (job-events.ts): queue position,
 * progress bar, the final status and cost, without reloading. A pending or processing job can be canceled
 * after a confirmation (`POST /v1/jobs/{id}/cancel`). Each job links to its detail page (jobs-detail.tsx).
 */
import { useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { Link } from "react-router";
import { api, unwrap } from "../api.ts";
import { type Column, DataTable, CursorPager } from "../components/DataTable.tsx";
import { FilterSelect } from "../components/FilterSelect.tsx";
import { CancelJobButton, JobStatus } from "../components/JobStatus.tsx";
import { EmptyState, QueryView } from "../components/states.tsx";
import { FirstCall } from "../components/FirstCall.tsx";
import { useCursor, useUrlFilters } from "../components/url-state.ts";
import { Charge, DateTime, Usd } from "../components/values.tsx";
import { isTerminal, JOB_STATUSES, type JobStatus as Status, type MediaJob, useLiveJob } from "../job-events.ts";
import type { PageMeta } from "../pages.ts";

export const page: PageMeta = { path: "/jobs", title: "Jobs", group: "customer", order: 30, section: "observe" };

const KINDS = ["image", "video", "audio"] as const;
type Kind = (typeof KINDS)[number];

const PAGE_SIZE = "20";

/** Renders `children` with the live state of `job` (one shared stream per job, however many cells use it). */
function Live({ job, children }: { job: MediaJob; children: (live: MediaJob) => ReactNode }) {
  const live = useLiveJob(job);
  return <>{children(live)}</>;
}

/**
 * A job's amount: the charge once it succeeded, the hold while it runs, nothing after a release; for a
 * test-mode job (D32) "test: no money moved" with the price it would have had. `cents` rounds for a list.
 */
export function JobAmount({ job, cents = false }: { job: MediaJob; cents?: boolean }) {
  if (job.mode === "test") return <Charge mode="test" amount={job.cost_usd ?? (isTerminal(job.status) ? null : job.hold_usd)} cents={cents} />;
  if (job.cost_usd !== null) return <Usd amount={job.cost_usd} cents={cents} />;
  if (job.status === "pending" || job.status === "processing")
    return (
      <span title="Held from the balance until the job ends">
        <Usd amount={job.hold_usd} cents={cents} /> <small>held</small>
      </span>
    );
  return <span title="Nothing charged">—</span>;
}

const COLUMNS: Column<MediaJob>[] = [
  {
    header: "Job",
    cell: (j) => (
      <Link to={`/jobs/${encodeURIComponent(j.id)}`} aria-label={`Details of ${j.id}`}>
        {/* Shortened to fit the table (the full id is the link's name, its title and on the detail page). */}
        <code className="job-id" title={j.id}>
          {j.id}
        </code>
      </Link>
    ),
  },
  { header: "Model", cell: (j) => j.model },
  { header: "Kind", cell: (j) => j.kind },
  { header: "Prompt", cell: (j) => <span className="prompt-cell" title={j.prompt ?? undefined}>{j.prompt ?? "—"}</span> },
  { header: "Status", cell: (j) => <Live job={j}>{(l) => <JobStatus job={l} />}</Live> },
  { header: "Created", cell: (j) => <DateTime iso={j.created_at} /> },
  { header: "Amount", numeric: true, cell: (j) => <Live job={j}>{(l) => <JobAmount job={l} cents />}</Live> },
  { header: "Actions", cell: (j) => <Live job={j}>{(l) => <CancelJobButton job={l} />}</Live> },
];

/** The media models of the price list, for the model filter (cached with the pricing page's query). */
function useMediaModels(kind: string): { id: string; name: string }[] {
  const catalog = useQuery({ queryKey: ["pricing"], queryFn: () => unwrap(api.GET("/v1/pricing")), staleTime: 5 * 60_000 });
  return (catalog.data?.media ?? []).filter((m) => (kind ? m.modality === kind : (KINDS as readonly string[]).includes(m.modality)));
}

export default function Jobs() {
  const [filters, setFilters] = useUrlFilters({ status: "", kind: "", model: "" });
  const cursor = useCursor();
  const models = useMediaModels(filters.kind);
  const status = (JOB_STATUSES as readonly string[]).includes(filters.status) ? (filters.status as Status) : undefined;
  const kind = (KINDS as readonly string[]).includes(filters.kind) ? (filters.kind as Kind) : undefined;
  const query = {
    limit: PAGE_SIZE,
    ...(cursor.after ? { after: cursor.after } : {}),
    ...(status ? { status } : {}),
    ...(kind ? { kind } : {}),
    ...(filters.model ? { model: filters.model } : {}),
  };
  const jobs = useQuery({
    queryKey: ["jobs", query],
    queryFn: ({ signal }) => unwrap(api.GET("/v1/jobs", { params: { query }, signal })),
    // A new job submitted elsewhere (an API client, another tab) shows up without a reload.
    refetchInterval: 15_000,
  });
  const filtered = Boolean(status || kind || filters.model);
  return (
    <>
      <p>Your image, video and stored audio jobs, newest first. Jobs still running update live; a running job can be canceled, and nothing is charged for it.</p>
      <form className="filters" role="search" aria-label="Filter the jobs" onSubmit={(e) => e.preventDefault()}>
        <FilterSelect id="jobs-status" label="Status" anyLabel="Any" value={status ?? ""} options={JOB_STATUSES} onChange={(v) => setFilters({ status: v })} />
        <FilterSelect id="jobs-kind" label="Kind" anyLabel="Any" value={kind ?? ""} options={KINDS} onChange={(v) => setFilters({ kind: v })} />
        <FilterSelect
          id="jobs-model"
          label="Model"
          anyLabel="Any"
          value={filters.model}
          options={models.map((m) => m.id)}
          onChange={(v) => setFilters({ model: v })}
        />
      </form>
      <QueryView
        query={jobs}
        isEmpty={(d) => d.data.length === 0 && !cursor.hasPrevious}
        empty={
          filtered ? (
            "No job matches these filters."
          ) : (
            <EmptyState
              after={<FirstCall />}
              title="No jobs yet."
              actions={
                <Link to="/playground/media" role="button">
                  Make an image in the playground
                </Link>
              }
            >
              <p>Image and video jobs you submit, and audio you keep with <code>save_to_blob</code>, show here and update live.</p>
            </EmptyState>
          )
        }
        loadingLabel="Loading jobs…"
      >
        {(d) => (
          <>
            <DataTable columns={COLUMNS} rows={d.data} rowKey={(j) => j.id} />
            <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.id} />
          </>
        )}
      </QueryView>
    </>
  );
}
