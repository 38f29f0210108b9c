/**
 * The module graph of docs/architecture.md, as enforced by `npm run lint` (eslint.config.js, eslint-plugin-boundaries):
 * deliberately forbidden imports in files placed inside src/ are reported, allowed ones are not, and the
 * real tree is clean.
 *
 * ESLint runs with the project's own configuration; only the type-aware parsing is switched off (the probe
 * files do not exist on disk, so TypeScript's project service cannot load them) and only the boundaries
 * rules are kept, so a report here can only come from the module graph.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { ESLint } from "eslint";
import tseslint from "typescript-eslint";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: [{ files: ["**/*.ts"], ...tseslint.configs.disableTypeChecked }],
  ruleFilter: ({ ruleId }) => ruleId.startsWith("boundaries/"),
});

/** The boundaries messages for `code` placed at `filePath` (relative to the repository root). */
async function boundaryErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}${filePath}` });
  return result.messages.map((m) => `${m.ruleId ?? "parser"}: ${m.message}`);
}

describe("module graph lint: forbidden imports are reported", () => {
  const forbidden: [string, string, RegExp][] = [
    ["src/upstreams/x.ts", `import { placeHold } from "../billing/ledger.ts";\nexport const x = placeHold;`, /no policy allowing/],
    ["src/upstreams/x.ts", `import type { ChatInput } from "../text/chat.ts";\nexport type X = ChatInput;`, /no policy allowing/],
    ["src/upstreams/x.ts", `import { submitJob } from "../jobs/jobs.ts";\nexport const x = submitJob;`, /no policy allowing/],
    ["src/http/routes/x.ts", `import { sql } from "kysely";\nexport const x = sql;`, /runs no SQL/],
    ["src/http/routes/x.ts", `import pg from "pg";\nexport const x = pg;`, /runs no SQL/],
    // SQL lives in storage/ and in the repository modules beside each service (docs/architecture.md).
    ["src/jobs/x.ts", `import { sql } from "kysely";\nexport const x = sql;`, /SQL lives in src\/storage/],
    ["src/billing/ledger.ts", `import { sql } from "kysely";\nexport const x = sql;`, /SQL lives in src\/storage/],
    ["src/text/x.ts", `import pg from "pg";\nexport const x = pg;`, /SQL lives in src\/storage/],
    ["src/http/routes/x.ts", `import { prepare } from "../../storage/prepared.ts";\nexport const x = prepare;`, /runs no SQL/],
    ["src/http/routes/x.ts", `import { DiskBlobStore } from "../../storage/disk-blobs.ts";\nexport const x = DiskBlobStore;`, /runs no SQL/],
    ["src/money.ts", `import { placeHold } from "./billing/ledger.ts";\nexport const x = placeHold;`, /lowest layer/],
    ["src/upstreams/simulator/x.ts", `import type { Micros } from "../../money.ts";\nexport type X = Micros;`, /know nothing about money/],
    ["src/errors.ts", `import { getBalance } from "./billing/ledger.ts";\nexport const x = getBalance;`, /lowest layer/],
    ["src/ids.ts", `import { TIERS } from "./catalog/tiers.ts";\nexport const x = TIERS;`, /lowest layer/],
    ["src/audio/x.ts", `import type { FastifyReply } from "fastify";\nexport type X = FastifyReply;`, /Only http\/ knows about HTTP/],
    ["src/jobs/x.ts", `import { pgPlaceHold } from "../billing/ledger-pg.repository.ts";\nexport const x = pgPlaceHold;`, /Only billing\//],
    ["src/accounts/x.ts", `import { moveBalance } from "../billing/ledger.repository.ts";\nexport const x = moveBalance;`, /Only billing\//],
    // The two cycles of issue 9, each from the side that now sits lower.
    ["src/limits/x.ts", `import { getAccount } from "../accounts/accounts.ts";\nexport const x = getAccount;`, /no policy allowing/],
    ["src/upstreams/x.ts", `import { runChat } from "../text/chat.ts";\nexport const x = runChat;`, /no policy allowing/],
    // services.ts and main.ts are imported only by http/ and main.ts.
    ["src/catalog/x.ts", `import { createServices } from "../services.ts";\nexport const x = createServices;`, /no policy allowing/],
    ["src/jobs/x.ts", `import type { Services } from "../services.ts";\nexport type X = Services;`, /no policy allowing/],
    ["src/services.ts", `import { main } from "./main.ts";\nexport const x = main;`, /no policy allowing/],
    // A new top-level folder must be placed in the layer order first.
    ["src/unplaced/x.ts", `export const x = 1;`, /no-unknown-files/],
    // webhooks/ sits below jobs/: jobs enqueue their events, the outbox never reaches up to render a job.
    ["src/webhooks/x.ts", `import { getJob } from "../jobs/jobs.ts";\nexport const x = getJob;`, /no policy allowing/],
    // The loopback fakes (fakes/) are development tools: no layer of src/ may import them, not even a type.
    ["src/upstreams/fal/x.ts", `import { startFalFake } from "../../../fakes/fal.ts";\nexport const x = startFalFake;`, /never imports fakes\//],
    ["src/accounts/x.ts", `import type { StripeFake } from "../../fakes/stripe.ts";\nexport type X = StripeFake;`, /never imports fakes\//],
    ["src/services.ts", `import { startLoopbackServer } from "../fakes/loopback.ts";\nexport const x = startLoopbackServer;`, /never imports fakes\//],
  ];
  for (const [file, code, expected] of forbidden) {
    test(`${file}: ${code.split("\n")[0]}`, async () => {
      const errors = await boundaryErrors(file, code);
      assert.ok(errors.length > 0, "expected a report");
      assert.match(errors.join("\n"), expected);
      assert.ok(errors.every((e) => e.startsWith("boundaries/")), errors.join("\n"));
    });
  }
});

describe("module graph lint: allowed imports pass", () => {
  const allowed: [string, string][] = [
    ["src/jobs/x.repository.ts", `import { sql } from "kysely";\nexport const x = sql;`],
    ["src/jobs/x.ts", `import type { Kysely } from "kysely";\nexport type X = Kysely<unknown>;`],
    ["src/upstreams/x.ts", `import type { AudioPool } from "../catalog/types.ts";\nexport type X = AudioPool;`],
    ["src/catalog/x.ts", `import { usdToMicros } from "../money.ts";\nexport const x = usdToMicros;`],
    ["src/http/routes/x.ts", `import type { Database } from "../../storage/schema.ts";\nexport type X = Database;`],
    ["src/http/routes/x.ts", `import { isValidBlobKey } from "../../storage/blob-store.ts";\nexport const x = isValidBlobKey;`],
    ["src/http/routes/x.ts", `import type { FastifyReply } from "fastify";\nexport type X = FastifyReply;`],
    ["src/billing/x.ts", `import { pgPlaceHold } from "./ledger-pg.repository.ts";\nexport const x = pgPlaceHold;`],
    ["src/jobs/x.ts", `import { isPostgres } from "../storage/dialect.ts";\nexport const x = isPostgres;`],
    ["src/jobs/x.ts", `import { effectiveLimits } from "../accounts/accounts.ts";\nexport const x = effectiveLimits;`],
    ["src/jobs/x.ts", `import { enqueueJobEvent } from "../webhooks/outbox.ts";\nexport const x = enqueueJobEvent;`],
    ["src/text/x.ts", `import { countMessageTokens } from "../upstreams/tokens.ts";\nexport const x = countMessageTokens;`],
  ];
  for (const [file, code] of allowed) {
    test(`${file}: ${code.split("\n")[0]}`, async () => {
      assert.deepEqual(await boundaryErrors(file, code), []);
    });
  }
});

test("the real tree follows the module graph", async () => {
  const results = await eslint.lintFiles(["src"]);
  const problems = results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.ruleId}: ${m.message}`));
  assert.deepEqual(problems, []);
  assert.ok(results.length > 50, "src was linted");
});
