/**
 * The documentation's relative links resolve: in README.md, docs/*.md and the READMEs of `deploy/`,
 * `bench/` and `console/`, every Markdown link that is not a URL with a scheme names a file or folder that
 * exists, and its `#anchor`, when it has one, names a heading of the Markdown file it points to (or of the
 * same file, for `#anchor` alone). Anchors are GitHub's heading slugs (see {@link slug}). Links inside code
 * (fenced blocks and `inline spans`) are not links and are skipped.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The documents checked (absolute paths): README.md, every docs/*.md, and the other READMEs that exist. */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => join(ROOT, "docs", name));
  const others = ["README.md", "deploy/README.md", "bench/README.md", "console/README.md"]
    .map((path) => join(ROOT, path))
    .filter((path) => existsSync(path));
  return [...others, ...docs];
}

/** The text without fenced code blocks and inline code spans (replaced by blanks, so nothing in code counts). */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/**
 * GitHub's anchor of a heading: the text with Markdown links reduced to their text, lowercased, every
 * character that is not a letter, a digit, a space, `-` or `_` dropped, and each space made a `-`
 * ("Real upstreams (`UPSTREAMS`)" is `real-upstreams-upstreams`).
 */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a Markdown file: one per heading outside code, repeated slugs numbered `-1`, `-2`... */
function anchors(file: string): Set<string> {
  const text = readFileSync(file, "utf8").replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const match of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** The relative link targets of a document: `[text](target)` and `![alt](target)` outside code, without a scheme. */
function relativeLinks(file: string): string[] {
  const text = withoutCode(readFileSync(file, "utf8"));
  const targets = [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("relative links and anchors of the documentation resolve", () => {
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (file: string): Set<string> => {
    let set = anchorCache.get(file);
    if (set === undefined) anchorCache.set(file, (set = anchors(file)));
    return set;
  };

  for (const doc of documents()) {
    const name = relative(ROOT, doc);
    test(name, () => {
      const broken: string[] = [];
      for (const target of relativeLinks(doc)) {
        const [path, anchor] = target.split("#", 2) as [string, string | undefined];
        const file = path === "" ? doc : join(dirname(doc), decodeURIComponent(path));
        if (!existsSync(file)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (anchor !== undefined && file.endsWith(".md") && !anchorsOf(file).has(anchor)) {
          broken.push(`${target}: no heading with that anchor in ${relative(ROOT, file)}`);
        }
      }
      assert.deepEqual(broken, [], `${name} has broken links`);
    });
  }

  test("the slug of a heading is GitHub's", () => {
    assert.equal(slug("Real upstreams (`UPSTREAMS`)"), "real-upstreams-upstreams");
    assert.equal(slug("Payments (Stripe Checkout)"), "payments-stripe-checkout");
    assert.equal(slug("The typed client (`packages/client`)"), "the-typed-client-packagesclient");
    assert.equal(slug("Several processes: PostgreSQL, Redis, S3"), "several-processes-postgresql-redis-s3");
    assert.equal(slug("Trying the real adapters without keys (`npm run fake-upstreams`)"), "trying-the-real-adapters-without-keys-npm-run-fake-upstreams");
  });
});
