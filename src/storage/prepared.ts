/**
 * Compile-once queries for the hot paths (auth, holds, captures).
 *
 * Building a query with Kysely's builder costs tens of microseconds (immutable node trees, compilation);
 * the ledger runs several per request. {@link prepare} builds the query once per database handle with
 * placeholder markers in place of the values, keeps the compiled SQL (dialect-specific, still produced by
 * Kysely) and at run time only substitutes the parameter array.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult, Transaction } from "kysely";
import { isPostgres } from "./ledger-pg.ts";
import type { Database } from "./schema.ts";

type Executor = Kysely<Database> | Transaction<Database>;

/** A marker standing for the `i`-th argument; typed as the value it replaces so builders type-check. */
export type Param = <T>(i: number) => T;

const MARKER = "\u0000kysely-param:";

/** SQL texts of compiled-once statements on PostgreSQL, by text: their server-side statement names. */
const pgNames = new Map<string, string>();

/**
 * The name under which a PostgreSQL connection keeps `sql` prepared (parsed and planned once per
 * connection instead of at every execution), or undefined for SQL that is not a compiled-once statement.
 */
export function pgStatementName(sql: string): string | undefined {
  return pgNames.get(sql);
}

/**
 * Returns a function running the query built by `build` with the given argument values. `build` must
 * use `p(i)` for every varying value (the i-th argument) and produce the same shape on every call.
 * The compiled form is cached per database handle (SQLite and PostgreSQL compile differently).
 */
export function prepare<Row>(
  build: (db: Kysely<Database>, p: Param) => Compilable<Row>,
): (db: Executor, ...args: unknown[]) => Promise<QueryResult<Row>> {
  const cache = new WeakMap<object, { compiled: CompiledQuery<Row>; slots: (number | null)[] }>();
  const p: Param = <T>(i: number) => `${MARKER}${i}` as unknown as T;
  return async (db, ...args) => {
    // Transactions share their parent's compiler: key the cache by the dialect's adapter-bearing executor.
    const key = db.getExecutor().adapter;
    let entry = cache.get(key);
    if (!entry) {
      const compiled = build(db as Kysely<Database>, p).compile();
      const slots = compiled.parameters.map((v) =>
        typeof v === "string" && v.startsWith(MARKER) ? Number(v.slice(MARKER.length)) : null,
      );
      entry = { compiled, slots };
      cache.set(key, entry);
      if (isPostgres(db) && !pgNames.has(compiled.sql)) pgNames.set(compiled.sql, `gw_${pgNames.size + 1}`);
    }
    const { compiled, slots } = entry;
    const parameters = compiled.parameters.map((v, i) => {
      const slot = slots[i];
      return slot === null ? v : args[slot];
    });
    return db.executeQuery<Row>({ ...compiled, parameters });
  };
}
