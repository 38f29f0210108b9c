/**
 * The decisions the code cites are in the repository: every `D<n>` named in the shipped code (`src/`,
 * `packages/`, `console/src/`, `fakes/`; tests are left out, they cite what the code cites) has its
 * `## D<n> <title>` section in docs/decisions.md; every section is cited somewhere (a decision nothing
 * names is either no longer implemented, then its section goes, or its code should say so, then a
 * docstring names it); and every path the document names exists, so a moved module shows up here rather
 * than as a dead pointer.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DOC = join(ROOT, "docs/decisions.md");

/** The folders whose text files are read for citations; `fakes/` (the loopback fakes) when it exists. */
const CITING_ROOTS = ["src", "packages", "console/src", "fakes"].filter((dir) => existsSync(join(ROOT, dir)));
/** Text files that can carry a citation (the simulator's media clips are binary and skipped). */
const TEXT_FILE = /\.(ts|tsx|js|mjs|cjs|md)$/;
/** Folders never read: installed packages and build output. */
const SKIPPED_DIRS = new Set(["node_modules", "dist"]);
/** A decision citation: `D` and one or two digits as a word (`D7`, `D34`; not `D7a` or `MD5`). */
const CITATION = /\bD([0-9]{1,2})\b/g;
/** A decision heading: `## D<n> <title>`. */
const HEADING = /^## D([0-9]+) \S.*$/gm;

/** Every text file under `dir` (absolute paths), skipping {@link SKIPPED_DIRS}. */
function textFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) out.push(...textFiles(join(dir, entry.name)));
    } else if (entry.isFile() && TEXT_FILE.test(entry.name)) {
      out.push(join(dir, entry.name));
    }
  }
  return out;
}

/** Each cited decision number with the first place (`path:line`) that cites it. */
function citations(): Map<number, string> {
  const found = new Map<number, string>();
  for (const root of CITING_ROOTS) {
    for (const file of textFiles(join(ROOT, root))) {
      const lines = readFileSync(file, "utf8").split("\n");
      lines.forEach((line, i) => {
        for (const m of line.matchAll(CITATION)) {
          const n = Number(m[1]);
          if (!found.has(n)) found.set(n, `${relative(ROOT, file)}:${i + 1}`);
        }
      });
    }
  }
  return found;
}

const doc = readFileSync(DOC, "utf8");
const headings = [...doc.matchAll(HEADING)].map((m) => Number(m[1]));
const cited = citations();

describe("docs/decisions.md holds every decision the code cites", () => {
  test("the code cites decisions at all (the scan reads the right folders)", () => {
    assert.ok(cited.size >= 10, `only ${cited.size} decisions cited: is the scan broken?`);
  });

  test("every cited D<n> has a `## D<n> <title>` section", () => {
    const missing = [...cited].filter(([n]) => !headings.includes(n)).map(([n, at]) => `D${n} (cited at ${at})`);
    assert.deepEqual(missing, [], `add a "## D<n> <title>" section to docs/decisions.md for: ${missing.join(", ")}`);
  });

  test("every section is cited by the code", () => {
    const uncited = headings.filter((n) => !cited.has(n)).map((n) => `D${n}`);
    assert.deepEqual(
      uncited,
      [],
      `no module cites ${uncited.join(", ")}: name the decision in the docstring of the code that implements it, or remove its section`,
    );
  });

  test("sections are unique and in ascending order", () => {
    const sorted = [...headings].sort((a, b) => a - b);
    assert.deepEqual(headings, sorted, "sections out of order");
    assert.equal(new Set(headings).size, headings.length, "a decision has two sections");
  });

  test("every module path the document names exists", () => {
    // Backquoted repository paths: `src/x.ts`, `src/jobs/`, `packages/client/src/index.ts`, `test/...`.
    const paths = [...doc.matchAll(/`((?:src|packages|console|test|fakes|bench|scripts|docs)\/[^`\s]*)`/g)].map((m) => m[1]);
    assert.ok(paths.length > 0, "the document names no module");
    const gone = [...new Set(paths)].filter((p) => !existsSync(join(ROOT, p)));
    assert.deepEqual(gone, [], `docs/decisions.md names paths that do not exist (moved or renamed?): ${gone.join(", ")}`);
  });
});
