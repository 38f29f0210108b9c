/**
 * Read-only figures about media jobs, for monitoring (the `/metrics` gauge of jobs by kind and status).
 */
import type { Executor } from "../billing/ledger.ts";
import type { JobStatus, JobsTable } from "../storage/schema.ts";
import { jobCountsByKindAndStatus } from "./jobs.repository.ts";

/** Number of jobs per (kind, status) pair, across every account; pairs without jobs are absent. */
export async function jobCountsByStatus(db: Executor): Promise<{ kind: JobsTable["kind"]; status: JobStatus; count: number }[]> {
  return (await jobCountsByKindAndStatus(db)).map((r) => ({ kind: r.kind, status: r.status, count: r.n }));
}
