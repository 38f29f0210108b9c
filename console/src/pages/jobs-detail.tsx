/**
 * One job (`GET /v1/jobs/{id}`, D3, D30), reached from the job list and the gallery: its facts (model,
 * kind, dates, hold and charge, failover layer, idempotency key, error), its live status while it runs
 * (events stream, job-events.ts) with a cancel button, and once it succeeded its outputs (previews by type,
 * download links) and its public share link.
 */
import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "react-router";
import { CancelJobButton, JobStatus } from "../components/JobStatus.tsx";
import { OutputList, ShareLink, shareUrlOf } from "../components/MediaPreview.tsx";
import { QueryView } from "../components/states.tsx";
import { DateTime, Usd } from "../components/values.tsx";
import { fetchJob, isTerminal, jobKey, type MediaJob, useLiveJob } from "../job-events.ts";
import type { PageMeta } from "../pages.ts";
import { JobAmount } from "./jobs.tsx";

export const page: PageMeta = { path: "/jobs/:id", title: "Job details", group: "customer", order: 31, nav: false };

function JobView({ fetched }: { fetched: MediaJob }) {
  const job = useLiveJob(fetched);
  const subject = `${job.model} ${job.kind} of ${job.id}`;
  return (
    <>
      <section aria-labelledby="job-facts-title">
        <h2 id="job-facts-title">
          <code>{job.id}</code>
        </h2>
        <dl className="job-facts">
          <dt>Status</dt>
          <dd>
            <JobStatus job={job} />
          </dd>
          {job.error && (
            <>
              <dt>Error</dt>
              <dd>
                <code>{job.error.code}</code>: {job.error.message}
              </dd>
            </>
          )}
          {job.prompt !== null && (
            <>
              <dt>Prompt</dt>
              <dd className="prompt">{job.prompt}</dd>
            </>
          )}
          <dt>Model</dt>
          <dd>{job.model}</dd>
          <dt>Kind</dt>
          <dd>{job.kind}</dd>
          <dt>Created</dt>
          <dd>
            <DateTime iso={job.created_at} />
          </dd>
          <dt>Last change</dt>
          <dd>
            <DateTime iso={job.updated_at} />
          </dd>
          {job.mode === "test" ? (
            <>
              <dt>Mode</dt>
              <dd className="mode-test">test key: no money moved</dd>
              <dt>Priced at</dt>
              <dd>
                <Usd amount={job.cost_usd ?? job.hold_usd} /> <small>(what a live key would have been {job.cost_usd === null ? "held" : "charged"})</small>
              </dd>
            </>
          ) : (
            <>
              <dt>Held at submit</dt>
              <dd>
                <Usd amount={job.hold_usd} />
              </dd>
              <dt>Charged</dt>
              <dd>
                <JobAmount job={job} />
              </dd>
            </>
          )}
          {job.output?.duration_sec !== undefined && (
            <>
              <dt>Length</dt>
              <dd>{job.output.duration_sec} s</dd>
            </>
          )}
          <dt>Source</dt>
          <dd>{job.fallback_layer === 0 ? "first source" : `fallback source ${job.fallback_layer}`}</dd>
          {job.idempotency_key && (
            <>
              <dt>Idempotency key</dt>
              <dd>
                <code>{job.idempotency_key}</code>
              </dd>
            </>
          )}
        </dl>
        {!isTerminal(job.status) && <CancelJobButton job={job} className="danger outline" />}
      </section>
      <section aria-labelledby="job-outputs-title">
        <h2 id="job-outputs-title">Outputs</h2>
        {job.output ? (
          <>
            <OutputList urls={job.output.urls.length > 0 ? job.output.urls : [job.output.url]} contentType={job.output.content_type} subject={subject} />
            <ShareLink jobId={job.id} url={shareUrlOf(job.id)} />
          </>
        ) : (
          <p className="empty">
            {isTerminal(job.status) ? "This job ended without an output." : "The outputs appear here when the job succeeds."}
          </p>
        )}
      </section>
    </>
  );
}

export default function JobDetail() {
  const id = useParams().id ?? "";
  const job = useQuery({ queryKey: jobKey(id), queryFn: ({ signal }) => fetchJob(id, signal) });
  return (
    <>
      <p>
        <Link to="/jobs">← All jobs</Link> · <Link to="/gallery">Gallery</Link>
      </p>
      <QueryView query={job} loadingLabel="Loading the job…">
        {(j) => <JobView fetched={j} />}
      </QueryView>
    </>
  );
}
