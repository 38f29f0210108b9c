/**
 * The ledger's writer thread (billing/ledger-writer.ts): its own connection to the gateway's SQLite file,
 * sharing the event loop's thread lock, and the ledger's own functions (ledger.ts) run on it, with the
 * group commit of storage/sqlite.ts. Each request is answered once its transaction committed or failed,
 * but for `placeHoldAhead`, answered once written and told again once committed.
 */
import { parentPort, workerData } from "node:worker_threads";
import { openSqliteOnThread } from "../storage/db.ts";
import { redirectLedgerMetrics } from "../metrics.ts";
import { captureHold, inTransaction, placeHold, releaseHold } from "./ledger.ts";
import type { LedgerWriterError, LedgerWriterFile, LedgerWriterReply, LedgerWriterRequest } from "./ledger-writer.ts";

const port = parentPort;
if (!port) throw new Error("ledger-writer-worker.ts runs as a worker thread");
const file = workerData as LedgerWriterFile;
const db = openSqliteOnThread(file).kysely;

// Entries recorded here are counted by the event loop's metrics: they ride on the next answer.
let entries: [string, number][] = [];
redirectLedgerMetrics((kind, amount) => entries.push([kind, amount]));

/** The error as it crosses to the event loop: class name, message and own fields (all plain data). */
function crossing(err: unknown): LedgerWriterError {
  if (!(err instanceof Error)) return { name: "Error", message: String(err), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) if (v === null || ["string", "number", "boolean"].includes(typeof v)) fields[k] = v;
  return { name: err.name, message: err.message, fields };
}

/**
 * `placeHoldAhead`: answered as soon as the hold is written in the open commit group (its transaction's
 * savepoint), before the group commits; a second answer tells the commit (ledger.ts `placeHoldAhead`).
 */
function placeHoldAhead(req: LedgerWriterRequest): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let placed = false;
    inTransaction(db, async (trx) => {
      const hold = await placeHold(trx, req.args[0] as never);
      placed = true;
      resolve(hold);
      return hold;
    }).then(
      () => answer({ id: req.id, committed: true }),
      (err: unknown) => (placed ? answer({ id: req.id, commitError: crossing(err) }) : reject(err)),
    );
  });
}

async function run(req: LedgerWriterRequest): Promise<unknown> {
  const a = req.args as never[];
  switch (req.op) {
    case "placeHoldAhead":
      return placeHoldAhead(req);
    case "placeHold":
      return placeHold(db, a[0]);
    case "captureHold":
      return captureHold(db, a[0], a[1], a[2]);
    case "releaseHold":
      return releaseHold(db, a[0], a[1]);
  }
}

/** Answers of this event-loop turn (a group commit settles many at once), posted together once it ends. */
let outbox: LedgerWriterReply[] = [];

function answer(reply: Omit<LedgerWriterReply, "entries">): void {
  const out: LedgerWriterReply = { ...reply, entries };
  entries = [];
  if (outbox.push(out) === 1) {
    // After every answer this commit settled (their promise chains run first), before the next batch.
    process.nextTick(() => {
      const batch = outbox;
      outbox = [];
      port!.postMessage(batch);
    });
  }
}

port.on("message", (m: LedgerWriterRequest[] | "close") => {
  if (m === "close") {
    void db.destroy().then(() => port.close());
    return;
  }
  for (const req of m) {
    run(req).then(
      (value) => answer({ id: req.id, value }),
      (err: unknown) => answer({ id: req.id, error: crossing(err) }),
    );
  }
});
