/**
 * The operator's account search (accounts/admin.repository.ts): an email prefix is exact on SQLite, on a
 * PostgreSQL database ordered by code point (the index range) and on one with a linguistic collation (ICU
 * `en-US`, where the same range would not be exact and the search falls back to LIKE).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { openDatabase, migrate, type Db } from "../../src/storage/db.ts";
import { prefixUpperBound, searchAccounts } from "../../src/accounts/admin.repository.ts";
import { BACKENDS, createTempDatabase, PG_ADMIN_URL } from "../helpers/backends.ts";

test("prefixUpperBound: the next string in code-point order", () => {
  assert.equal(prefixUpperBound("abc"), "abd");
  assert.equal(prefixUpperBound("john."), "john/");
  assert.equal(prefixUpperBound("a\u{10ffff}"), "b");
  assert.equal(prefixUpperBound("\u{10ffff}"), null);
  assert.equal(prefixUpperBound("\ud7ff"), "\ue000");
  assert.equal(prefixUpperBound(""), null);
});

const EMAILS = ["john.doe@example.com", "johndoe@example.com", "john-x@example.com", "john/@example.com", "jöhn@example.com", "johnz@example.com", "b@example.com"];

/** The databases to search: each backend, and PostgreSQL with an ICU collation. */
const CASES = [
  ...BACKENDS.map((b) => ({ name: b.name, skip: b.skip, icu: false })),
  { name: "postgres" as const, skip: BACKENDS[1]!.skip, icu: true },
];

for (const c of CASES) {
  describe(`account search (${c.name}${c.icu ? ", ICU en-US collation" : ""})`, { skip: c.skip }, () => {
    let db: Db;
    let drop: () => Promise<void>;
    before(async () => {
      if (c.icu) {
        const name = `gwtest_${randomBytes(6).toString("hex")}`;
        const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
        await admin.connect();
        await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`);
        await admin.end();
        const url = new URL(PG_ADMIN_URL);
        url.pathname = `/${name}`;
        db = openDatabase(url.toString());
        drop = async () => {
          const a = new pg.Client({ connectionString: PG_ADMIN_URL });
          await a.connect();
          await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          await a.end();
        };
      } else {
        const temp = await createTempDatabase(c.name);
        db = openDatabase(temp.url);
        drop = temp.drop;
      }
      await migrate(db);
      let t = 1_000;
      for (const email of EMAILS) {
        // A user with its personal organization (D41), as registration makes them.
        const name = email.split("@")[0];
        await db.kysely
          .insertInto("accounts")
          .values({ id: `org_${name}`, name: email, balance_micros: 0, total_deposits_micros: 0, tier_override: null, limits_override: null, created_at: t })
          .execute();
        await db.kysely
          .insertInto("users")
          .values({ id: `usr_${name}`, email, password_hash: "x", personal_org_id: `org_${name}`, created_at: t++ })
          .execute();
      }
    });
    after(async () => {
      await db?.close();
      await drop?.();
    });

    const search = async (q: string) =>
      (await searchAccounts(db.kysely, db.dialect, { q, limit: 100, after: null })).rows.map((r) => r.email).sort();
    const expected = (q: string) => EMAILS.filter((e) => e.startsWith(q.toLowerCase())).sort();

    test("every prefix finds exactly the emails that start with it", async () => {
      for (const q of ["john", "john.", "john-", "john/", "JOHN.D", "jo", "jö", "johnz", "b@", "x", "john.doe@example.com"]) {
        assert.deepEqual(await search(q), expected(q), q);
      }
    });

    test("an exact id, and LIKE wildcards taken literally", async () => {
      assert.deepEqual(await search("usr_b"), ["b@example.com"]);
      assert.deepEqual(await search("j%"), []);
      assert.deepEqual(await search("j_hn"), []);
    });
  });
}
