/**
 * Retention (D46): an organization's own windows, and what the retention sweep (jobs/retention.ts) marks on
 * the jobs it has cleared.
 *
 * - `accounts.retention_prompts_days`, `accounts.retention_outputs_days`: the organization's windows in days,
 *   or null for the operator's (`RETENTION_PROMPTS_DAYS`, `RETENTION_OUTPUTS_DAYS`). Never longer than the
 *   operator's when written; the sweep uses the smaller of the two anyway (the operator may shorten theirs
 *   later). `retention_prompts_days = 0`: the organization's request texts are never written (zero retention).
 * - `jobs.texts_cleared_at` (epoch ms): when the job's request texts were removed from `request_json`,
 *   `dialect_json` and its webhook events' data (or, for a job written without them, when it was written);
 *   null while they are kept.
 * - `jobs.texts_holder`: a job written without its texts (zero retention) names the process that holds them
 *   in memory (jobs/texts.ts `WithheldTexts`); only that process's runner claims it while it has no upstream
 *   handle. Null for every other job.
 * - `jobs.output_expired_at` (epoch ms): when the job's generated files were deleted for age; its
 *   `output_json` is null from then on, and the file URLs answer 410 `output_expired`.
 *
 * Indexes, each partial so it holds only the rows the sweep still has to visit and a pass reads nothing it
 * already cleared: the jobs whose texts are kept by creation time (the operator's window) and by
 * organization and creation time (an organization's shorter one), the same two for jobs whose output is
 * kept, the organizations with windows of their own, and the webhook events of a job (their data is cleared
 * with the job). Usage records are deleted by age through `usage_mode_created` (migration 011).
 */
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("accounts").addColumn("retention_prompts_days", "integer").execute();
  await db.schema.alterTable("accounts").addColumn("retention_outputs_days", "integer").execute();
  await db.schema.alterTable("jobs").addColumn("texts_cleared_at", "bigint").execute();
  await db.schema.alterTable("jobs").addColumn("texts_holder", "text").execute();
  await db.schema.alterTable("jobs").addColumn("output_expired_at", "bigint").execute();

  const textsKept = sql.ref("texts_cleared_at");
  await db.schema.createIndex("jobs_texts_kept").on("jobs").column("created_at").where(textsKept, "is", null).execute();
  await db.schema.createIndex("jobs_texts_kept_org").on("jobs").columns(["account_id", "created_at"]).where(textsKept, "is", null).execute();
  const outputKept = sql.ref("output_json");
  await db.schema.createIndex("jobs_output_kept").on("jobs").column("created_at").where(outputKept, "is not", null).execute();
  await db.schema.createIndex("jobs_output_kept_org").on("jobs").columns(["account_id", "created_at"]).where(outputKept, "is not", null).execute();
  await db.schema
    .createIndex("accounts_own_retention")
    .on("accounts")
    .column("id")
    .where((eb) => eb.or([eb(sql.ref("retention_prompts_days"), "is not", null), eb(sql.ref("retention_outputs_days"), "is not", null)]))
    .execute();
  await db.schema.createIndex("webhook_events_job").on("webhook_events").column("job_id").where(sql.ref("job_id"), "is not", null).execute();
}
