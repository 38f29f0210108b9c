/**
 * `npm test`: runs every test file under test/ with Node's test runner.
 *
 * PostgreSQL and Redis tests run when those servers answer. With `CI=true` (or `REQUIRE_SERVICES=1`)
 * they are required: an unreachable server fails the run instead of skipping (DEVELOPERS.md).
 */
import { spawnSync } from "node:child_process";
import { globSync } from "node:fs";

const files = globSync("test/**/*.test.ts").sort();
const args = ["--test", "--test-reporter=spec", "--test-concurrency=2", ...files, ...process.argv.slice(2)];
const result = spawnSync(process.execPath, args, { stdio: "inherit" });
process.exit(result.status ?? 1);
