/**
 * Waiting on a job (D30): `Prefer: wait=N` on a job submit or poll, and the abort signals of waits and
 * event streams, which end when the client goes away or the gateway closes.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { JobView } from "../jobs/jobs.ts";
import { isTerminal, waitForJobEnd } from "../jobs/watch.ts";
import type { Services } from "../services.ts";
import { principalOf } from "./auth.ts";
import type { App } from "./types.ts";

/** The longest `Prefer: wait` honoured, seconds (D30). */
const MAX_WAIT_S = 60;

/**
 * The seconds of a `Prefer: wait=N` (RFC 7240; several preferences are comma-separated, a value may be
 * quoted), at most {@link MAX_WAIT_S}; null when absent or not a positive whole number (a preference the
 * server cannot honour is ignored, never refused).
 */
export function preferredWaitS(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header.join(",") : header;
  if (!value) return null;
  for (const pref of value.split(",")) {
    const m = /^\s*wait\s*=\s*"?(\d{1,6})"?\s*(;.*)?$/i.exec(pref);
    if (m) {
      const n = Number(m[1]);
      return n >= 1 ? Math.min(n, MAX_WAIT_S) : null;
    }
  }
  return null;
}

/**
 * The per-scope machinery of waits and event streams: `watcher` gives a signal that aborts when the client
 * goes away or the gateway closes; `honourWait` applies `Prefer: wait` (D30) to a job read or submit.
 */
export function jobWaits(app: App, services: Services) {
  const deps = { db: services.db.kysely, publicBaseUrl: services.config.publicBaseUrl, changes: services.jobChanges };

  // Waits and event streams end when the gateway closes, so a shutdown never waits for them.
  const open = new Set<AbortController>();
  app.addHook("preClose", async () => {
    for (const c of open) c.abort();
  });
  /** A signal that aborts when the client goes away or the gateway closes; `done()` forgets it. */
  const watcher = (reply: FastifyReply) => {
    const controller = new AbortController();
    open.add(controller);
    const onClose = () => controller.abort();
    reply.raw.once("close", onClose);
    return {
      signal: controller.signal,
      done: () => {
        open.delete(controller);
        reply.raw.off("close", onClose);
      },
    };
  };

  /** Honours `Prefer: wait` (D30): the job once it ended or after the wait; the header says it was applied. */
  const honourWait = async (req: FastifyRequest, reply: FastifyReply, job: JobView): Promise<JobView> => {
    const waitS = preferredWaitS(req.headers.prefer);
    if (waitS === null) return job;
    reply.header("Preference-Applied", `wait=${waitS}`);
    if (isTerminal(job)) return job;
    const w = watcher(reply);
    try {
      return await waitForJobEnd(deps, principalOf(req), job.id, waitS * 1000, w.signal, job);
    } finally {
      w.done();
    }
  };
  return { deps, watcher, honourWait };
}
