/**
 * The audit log (D45): one append-only row per change made through the API (keys, members, invites,
 * organizations, budgets, webhooks, alerts, top-ups, the operator's deposits, tiers and limits, sign-ins
 * and failed sign-ins), written in the transaction of the change it records (accounts/audit.ts).
 *
 * - `id`: `aud_<random>` (ids.ts `newTimeOrderedId`: unguessable, and later ids sort after earlier ones);
 * - `at`: epoch ms; `org_id`: the organization the change belongs to, null for an event without one (a
 *   failed sign-in with an unknown email, a user's own sign-in without a personal organization);
 * - `actor_type` (`user`, `key` or `operator`), `actor_id`, `actor_email` (a user's, else null);
 * - `action` (`key.created`, ...), `target_type`, `target_id`;
 * - `request_id` (the `X-Svc-Request-Id` of the request that made the change), `ip`, `user_agent`;
 * - `changes_json`: `{field: [before, after]}` as JSON text, or null; never a secret.
 *
 * No foreign key: an entry outlives what it names (a deleted organization, key or member). The indexes
 * serve an organization's log newest first and the operator's log (and a retention sweep) by time.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("audit_log")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("at", "bigint", (c) => c.notNull())
    .addColumn("org_id", "text")
    .addColumn("actor_type", "text", (c) => c.notNull())
    .addColumn("actor_id", "text", (c) => c.notNull())
    .addColumn("actor_email", "text")
    .addColumn("action", "text", (c) => c.notNull())
    .addColumn("target_type", "text", (c) => c.notNull())
    .addColumn("target_id", "text", (c) => c.notNull())
    .addColumn("request_id", "text", (c) => c.notNull())
    .addColumn("ip", "text")
    .addColumn("user_agent", "text")
    .addColumn("changes_json", "text")
    .execute();
  await db.schema.createIndex("audit_log_org_at").on("audit_log").columns(["org_id", "at", "id"]).execute();
  await db.schema.createIndex("audit_log_at").on("audit_log").columns(["at", "id"]).execute();
}
