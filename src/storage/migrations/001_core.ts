/**
 * Core tables: accounts, API keys, sessions, holds and the ledger. One migration for both dialects;
 * the only difference is the auto-increment type of the ledger sequence.
 */
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("accounts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("balance_micros", "bigint", (c) => c.notNull().check(sql`balance_micros >= 0`))
    .addColumn("total_deposits_micros", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("tier_override", "integer")
    .addColumn("limits_override", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("api_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("name", "text")
    .addColumn("key_hash", "text", (c) => c.notNull().unique())
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .execute();
  await db.schema.createIndex("api_keys_account").on("api_keys").column("account_id").execute();

  await db.schema
    .createTable("sessions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("holds")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("amount_micros", "bigint", (c) => c.notNull().check(sql`amount_micros > 0`))
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("captured_micros", "bigint")
    .addColumn("job_id", "text")
    .addColumn("reference", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("settled_at", "bigint")
    .execute();
  await db.schema.createIndex("holds_account_status").on("holds").columns(["account_id", "status"]).execute();

  await db.schema
    .createTable("ledger_entries")
    .addColumn("seq", dialect === "postgres" ? "bigserial" : "integer", (c) =>
      dialect === "postgres" ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("amount_micros", "bigint", (c) => c.notNull())
    .addColumn("balance_after_micros", "bigint", (c) => c.notNull())
    .addColumn("hold_id", "text")
    .addColumn("job_id", "text")
    .addColumn("reference", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("ledger_account_seq")
    .on("ledger_entries")
    .columns(["account_id", "seq"])
    .execute();

  // Designed and cloned voices and their owners (spec "Voice": ownership).
  await db.schema
    .createTable("voices")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("name", "text")
    .addColumn("source", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("voices_account").on("voices").column("account_id").execute();
}
