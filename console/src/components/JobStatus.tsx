/**
 * A job's status as the console shows it (D3, D30): the status word, the queue position of a pending job,
 * a progress bar of a processing one (named for screen readers), the error of a failed one; and the cancel
 * button of a pending or processing job, which asks for confirmation first. Used by the job list, the job
 * detail page and any page that follows a job (job-events.ts keeps them live).
 */
import "./jobs-media.css";
import { useState } from "react";
import { isCancelable, type MediaJob, useCancelJob } from "../job-events.ts";
import { ConfirmDialog } from "./ConfirmDialog.tsx";
import { ErrorNotice } from "./states.tsx";
import { can, useRole } from "../roles.ts";

/** What a status means, for the status's tooltip and the detail page. */
const STATUS_HINT: Record<MediaJob["status"], string> = {
  pending: "Waiting for a free slot; the hold is placed.",
  processing: "Being generated.",
  succeeded: "Done; charged.",
  failed: "Ended without a result; the hold was released, nothing charged.",
  refunded: "Charged, then refunded.",
  expired: "Took too long and was given up; the hold was released, nothing charged.",
};

/**
 * Status word (with a class per status for its colour), then the live detail: "3rd in the queue", a
 * progress bar (indeterminate when the source does not report progress), or the error code of a failed job.
 */
export function JobStatus({ job }: { job: MediaJob }) {
  return (
    <span className="job-status">
      <span className={`status status-${job.status}`} title={STATUS_HINT[job.status]}>
        {job.status}
      </span>
      {job.status === "pending" && job.queue_position !== null && <small> · queue position {job.queue_position}</small>}
      {job.status === "processing" && <JobProgress job={job} />}
      {job.error && (
        <small title={job.error.message}>
          {" "}
          · <code>{job.error.code}</code>
        </small>
      )}
    </span>
  );
}

/** The progress bar of a processing job: "Progress of job_…", with its percentage as text when known. */
export function JobProgress({ job }: { job: MediaJob }) {
  const known = job.progress !== null;
  const percent = known ? Math.round(job.progress! * 100) : null;
  return (
    <span className="job-progress">
      {known ? (
        <progress max={1} value={job.progress!} aria-label={`Progress of ${job.id}`} aria-valuetext={`${percent}%`} />
      ) : (
        // No value: an indeterminate bar (the source does not report how far it is).
        <progress aria-label={`Progress of ${job.id}`} aria-valuetext="in progress" />
      )}
      {known && <small>{percent}%</small>}
    </span>
  );
}

/**
 * "Cancel" for a pending or processing job (nothing for an ended one), confirmed in a dialog: the job ends
 * `failed` with `canceled`, its hold is released and nothing is charged (D30).
 */
export function CancelJobButton({ job, className = "danger outline small" }: { job: MediaJob; className?: string }) {
  const [asking, setAsking] = useState(false);
  const cancel = useCancelJob(() => setAsking(false));
  // A viewer makes no calls (D41): no cancel either.
  const role = useRole();
  if ((!isCancelable(job.status) && !asking) || !can(role, "call")) return null;
  return (
    <>
      <button type="button" className={className} aria-label={`Cancel ${job.id}`} onClick={() => (cancel.reset(), setAsking(true))}>
        Cancel
      </button>
      <ConfirmDialog
        open={asking}
        title="Cancel this job?"
        confirmLabel="Cancel the job"
        cancelLabel="Keep it"
        busy={cancel.isPending}
        onCancel={() => setAsking(false)}
        onConfirm={() => cancel.mutate(job.id)}
      >
        <p>
          <code>{job.id}</code> ({job.model}) stops at once and ends as failed (canceled). Its hold is released: nothing is charged.
        </p>
        {cancel.isError && <ErrorNotice error={cancel.error} />}
      </ConfirmDialog>
    </>
  );
}
