/**
 * The SQL of a stored music or sound-effect call (audio/generate.ts): the call is kept as a job that has
 * already succeeded (its audio in the blob store), inserted in the transaction that captures its price, so
 * the job row and the charge commit together.
 */
import type { Transaction } from "kysely";
import type { Micros } from "../money.ts";
import type { Database } from "../storage/schema.ts";

/**
 * Inserts the succeeded `audio` job `id` (held and charged `costMicros`, `now` epoch ms for every time
 * column); `requestJson` and `outputJson` are the job's request and output as JSON.
 */
export async function insertSucceededAudioJob(
  trx: Transaction<Database>,
  j: {
    id: string;
    accountId: string;
    apiKeyId: string | null;
    model: string;
    holdId: string | null;
    costMicros: Micros;
    requestJson: string;
    outputJson: string;
    durationSec: number;
    now: number;
    /** Set when the request is written without its texts (D46 zero retention): nothing for the sweep to clear. */
    textsClearedAt?: number | null;
  },
): Promise<void> {
  await trx
    .insertInto("jobs")
    .values({
      id: j.id,
      account_id: j.accountId,
      api_key_id: j.apiKeyId,
      kind: "audio",
      model: j.model,
      status: "succeeded",
      hold_id: j.holdId,
      hold_micros: j.costMicros,
      cost_micros: j.costMicros,
      request_json: j.requestJson,
      request_hash: null,
      idempotency_key: null,
      output_json: j.outputJson,
      duration_sec: j.durationSec,
      error_code: null,
      error_message: null,
      created_at: j.now,
      updated_at: j.now,
      started_at: j.now,
      heartbeat_at: null,
      worker_id: null,
      texts_cleared_at: j.textsClearedAt ?? null,
    })
    .execute();
}
