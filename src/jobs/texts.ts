/**
 * Zero retention of a job's texts (D46, `prompts_days: 0`): the submit writes the job row without them
 * (request.ts `withoutJobTexts`) and keeps them here, in this process's memory, for its runner; the row names
 * this store ({@link WithheldTexts.holderId}, `jobs.texts_holder`) so that no other runner claims the job
 * before an upstream accepted it (storage/job-queue.ts `claimJobs`).
 *
 * What happens to such a job when the process holding its texts is not the one that can go on:
 * - this process stops (SIGTERM): its runner ends the jobs whose texts it holds and that no upstream has
 *   accepted yet `failed` with `prompt_unavailable` (the hold released, nothing charged), instead of handing
 *   them back to a queue no other runner could serve;
 * - this process dies: its pending jobs are claimed by nobody and expire at their give-up time (hold
 *   released); its running ones are refunded by the sweep like any job whose worker stopped reporting;
 * - a job an upstream had accepted (a handle on the row) needs no text to be resumed: any runner takes it
 *   over and polls it (D28). Only a failover to another source would need the prompt again: without it,
 *   the job ends `failed` with `prompt_unavailable`, nothing charged.
 *
 * Entries are dropped when their job ends here, and in any case after {@link WITHHELD_TTL_MS} (a job gives
 * up long before: its queue and run times are bounded by jobs/sweep.ts `GIVE_UP_MS`).
 */
import { newId } from "../ids.ts";
import type { JobTexts } from "./request.ts";

/** How long a withheld text is kept at most, ms: past a pending job's give-up time plus a running job's. */
export const WITHHELD_TTL_MS = 60 * 60_000;

/** The message of a job whose texts were not stored and are no longer held by any process. */
export const PROMPT_UNAVAILABLE_MESSAGE =
  "This organization keeps no request texts (zero retention), and the gateway process that held this job's prompt stopped before an upstream accepted the job; nothing was charged. Submit it again.";

/** The texts of this process's zero-retention jobs, by job id, in memory only. */
export class WithheldTexts {
  /** Written on the jobs whose texts this store holds (`jobs.texts_holder`). */
  readonly holderId = newId("txh", 16);
  readonly #entries = new Map<string, { texts: JobTexts; at: number }>();

  /** Keeps `texts` of job `jobId` (submitted now). */
  put(jobId: string, texts: JobTexts, now = Date.now()): void {
    this.#entries.set(jobId, { texts, at: now });
  }

  /** The texts of job `jobId`, or undefined when this process does not hold them. */
  get(jobId: string): JobTexts | undefined {
    return this.#entries.get(jobId)?.texts;
  }

  /** Forgets the texts of job `jobId` (it ended, or its submit failed). */
  drop(jobId: string): void {
    this.#entries.delete(jobId);
  }

  /** The ids of the jobs whose texts are held. */
  jobIds(): string[] {
    return [...this.#entries.keys()];
  }

  /** Forgets texts held longer than {@link WITHHELD_TTL_MS} (jobs that ended elsewhere: a cancel, the sweep). */
  prune(now = Date.now()): void {
    for (const [id, e] of this.#entries) if (now - e.at > WITHHELD_TTL_MS) this.#entries.delete(id);
  }

  /** How many texts are held. */
  get size(): number {
    return this.#entries.size;
  }
}
