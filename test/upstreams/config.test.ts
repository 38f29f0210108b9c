/**
 * `UPSTREAMS` (D25, src/upstreams/config.ts): every validation error names the entry (index and name)
 * and the field and never repeats the key; `env:` keys are resolved; the file form; the merge with
 * `TEXT_UPSTREAMS`; and a bad value stops `node src/main.ts serve`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { loadConfig } from "../../src/config.ts";
import {
  loadUpstreams,
  mergeTextUpstreams,
  parseUpstreams,
  PROTOCOL_FAMILIES,
  TEXT_FAMILIES,
  UpstreamsConfigError,
} from "../../src/upstreams/config.ts";

const KEY = "sk-live-TOPSECRET-0123456789";
const noEnv = (): string | undefined => undefined;

/** A valid entry, changed by `patch` (a field set to undefined is removed). */
function entry(patch: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    name: "fal-main",
    protocol: "fal",
    base_url: "https://queue.fal.run",
    api_key: KEY,
    families: ["imgA", "vidA"],
  };
  const out = { ...base, ...patch };
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k];
  return out;
}

/** Parses `list` (inline) and returns the error message, failing when it parses. */
function errorOf(list: unknown, lookup: (n: string) => string | undefined = noEnv): string {
  try {
    parseUpstreams(typeof list === "string" ? list : JSON.stringify(list), lookup);
  } catch (err) {
    assert.ok(err instanceof UpstreamsConfigError, `not an UpstreamsConfigError: ${String(err)}`);
    assert.ok(!err.message.includes(KEY) && !err.message.includes("TOPSECRET"), `key in message: ${err.message}`);
    return err.message;
  }
  assert.fail(`parsed: ${JSON.stringify(list)}`);
}

test("a valid entry parses: defaults, trailing slash, lowercased hosts", () => {
  const [s, ...rest] = parseUpstreams(
    JSON.stringify([entry({ base_url: "https://queue.fal.run/", trusted_hosts: ["CDN.Example.com", "10.0.0.5:9000", "[::1]:8080"] })]),
    noEnv,
  );
  assert.equal(rest.length, 0);
  assert.ok(s);
  assert.equal(s.name, "fal-main");
  assert.equal(s.protocol, "fal");
  assert.equal(s.baseUrl, "https://queue.fal.run");
  assert.equal(s.apiKey, KEY);
  assert.deepEqual(s.families, ["imgA", "vidA"]);
  assert.deepEqual(s.models, {});
  assert.equal(s.timeoutMs, null);
  assert.equal(s.maxConcurrency, null);
  assert.deepEqual(s.trustedHosts, ["cdn.example.com", "10.0.0.5:9000", "[::1]:8080"]);
  assert.equal(s.origin, "UPSTREAMS");
  // The key never shows in a JSON dump or an inspection of a source.
  assert.ok(!JSON.stringify(s).includes(KEY));
  assert.ok(!inspect(s).includes(KEY));
  assert.ok(JSON.stringify(s).includes("[redacted]"));
});

test("optional fields: models, timeout_s (to ms), max_concurrency", () => {
  const [s] = parseUpstreams(
    JSON.stringify([
      entry({
        families: ["vidC"],
        models: { "vidC-02-512p": "fal-ai/x/text-to-video", "vidC-02-512p/image": "fal-ai/x/image-to-video" },
        timeout_s: 2.5,
        max_concurrency: 3,
      }),
    ]),
    noEnv,
  );
  assert.deepEqual(s?.models, { "vidC-02-512p": "fal-ai/x/text-to-video", "vidC-02-512p/image": "fal-ai/x/image-to-video" });
  assert.equal(s?.timeoutMs, 2500);
  assert.equal(s?.maxConcurrency, 3);
});

test("unset or empty UPSTREAMS means no source", () => {
  assert.deepEqual(parseUpstreams(undefined, noEnv), []);
  assert.deepEqual(parseUpstreams(null, noEnv), []);
  assert.deepEqual(parseUpstreams("  ", noEnv), []);
  assert.deepEqual(parseUpstreams("[]", noEnv), []);
});

test("every protocol accepts exactly D25's families (and D43's: ElevenLabs Scribe for transcribe)", () => {
  const d25: Record<string, string[]> = {
    elevenlabs: ["alpha", "transcribe"],
    minimax: ["beta", "vidC"],
    fal: ["imgA", "imgB", "vidA", "vidB", "vidC", "vidD"],
    bfl: ["imgB"],
    openai: ["imgC", "transcribe", "understand", ...TEXT_FAMILIES],
  };
  assert.deepEqual(PROTOCOL_FAMILIES, d25);
  assert.ok(TEXT_FAMILIES.length > 0 && TEXT_FAMILIES.includes("txtA"));
  const all = [...new Set(Object.values(d25).flat())];
  for (const [protocol, families] of Object.entries(d25)) {
    const [s] = parseUpstreams(JSON.stringify([entry({ name: protocol, protocol, families })]), noEnv);
    assert.deepEqual(s?.families, families);
    for (const family of all.filter((f) => !families.includes(f))) {
      const msg = errorOf([entry({ name: protocol, protocol, families: [family] })]);
      assert.match(msg, new RegExp(`^UPSTREAMS\\[0\\] \\(name "${protocol}"\\): field families\\[0\\] '${family}' cannot be served by protocol ${protocol}`));
    }
  }
});

test("each validation error names the entry (index and name) and the field, never the key", () => {
  const ok = entry({ name: "ok-one" });
  const cases: { patch: Record<string, unknown>; field: RegExp; name?: string | null }[] = [
    { patch: { name: undefined }, field: /field name is required/, name: null },
    { patch: { name: "Bad_Name" }, field: /field name must use only a-z, 0-9 and '-'/, name: null },
    { patch: { name: 7 }, field: /field name must be string/, name: null },
    { patch: { protocol: "grpc" }, field: /field protocol must be one of elevenlabs, minimax, fal, bfl, openai/ },
    { patch: { protocol: undefined }, field: /field protocol is required/ },
    { patch: { base_url: undefined }, field: /field base_url is required/ },
    { patch: { base_url: "not a url" }, field: /field base_url must be an absolute http\(s\) URL/ },
    { patch: { base_url: "ftp://files.example.com" }, field: /field base_url must be an http or https URL/ },
    { patch: { base_url: `https://user:${KEY}@api.example.com` }, field: /field base_url must not carry credentials/ },
    { patch: { base_url: `https://api.example.com/?key=${KEY}` }, field: /field base_url must not have a query/ },
    { patch: { api_key: undefined }, field: /field api_key is required/ },
    { patch: { api_key: "" }, field: /field api_key must not have fewer than 1 characters/ },
    { patch: { api_key: 12345 }, field: /field api_key must be string/ },
    { patch: { api_key: "env:" }, field: /field api_key must be a literal key or env:VARNAME/ },
    { patch: { api_key: "env:NOT_SET_ANYWHERE" }, field: /field api_key names the environment variable NOT_SET_ANYWHERE, which is not set/ },
    { patch: { families: undefined }, field: /field families is required/ },
    { patch: { families: [] }, field: /field families must not have fewer than 1 items/ },
    { patch: { families: "imgA" }, field: /field families must be array/ },
    { patch: { families: ["imgA", 3] }, field: /field families\[1\] must be string/ },
    { patch: { families: ["imgZ"] }, field: /field families\[0\] 'imgZ' is not a family/ },
    { patch: { families: ["imgA", "imgA"] }, field: /field families\[1\] 'imgA' is listed twice/ },
    { patch: { families: ["alpha"] }, field: /field families\[0\] 'alpha' cannot be served by protocol fal/ },
    { patch: { models: { "imgA-v4": "" } }, field: /field models\["imgA-v4"\] must not have fewer than 1 characters/ },
    { patch: { models: { "imgA-v4": 4 } }, field: /field models\["imgA-v4"\] must be string/ },
    { patch: { models: [] }, field: /field models must be object/ },
    { patch: { models: { "no-such-model": "x" } }, field: /field models\["no-such-model"\] does not name a catalog model id/ },
    { patch: { models: { "imgB-2-pro": "x" } }, field: /field models\["imgB-2-pro"\] names a model of a family this source does not serve/ },
    { patch: { models: { "vidA-3-pro/video": "x" } }, field: /field models\["vidA-3-pro\/video"\] does not name a catalog model id/ },
    { patch: { timeout_s: 0 }, field: /field timeout_s must be > 0/ },
    { patch: { timeout_s: "30" }, field: /field timeout_s must be number/ },
    { patch: { max_concurrency: 1.5 }, field: /field max_concurrency must be integer/ },
    { patch: { max_concurrency: 0 }, field: /field max_concurrency must be >= 1/ },
    { patch: { trusted_hosts: "cdn.example.com" }, field: /field trusted_hosts must be array/ },
    { patch: { trusted_hosts: ["cdn.example.com", "https://cdn.example.com"] }, field: /field trusted_hosts\[1\] must be a host or host:port/ },
    { patch: { trusted_hosts: ["cdn.example.com/path"] }, field: /field trusted_hosts\[0\] must be a host or host:port/ },
    { patch: { trusted_hosts: [`${KEY}@cdn.example.com`] }, field: /field trusted_hosts\[0\] must be a host or host:port/ },
    { patch: { trusted_hosts: ["cdn.example.com:99999"] }, field: /field trusted_hosts\[0\] must be a host or host:port/ },
    { patch: { max_concurent: 3 }, field: /field "max_concurent" is not a field of an entry/ },
  ];
  for (const { patch, field, name } of cases) {
    const bad = entry({ name: "bad-one", ...patch });
    const msg = errorOf([ok, bad]);
    const label = name === null ? /^UPSTREAMS\[1\]: / : /^UPSTREAMS\[1\] \(name "bad-one"\): /;
    assert.match(msg, label, `${JSON.stringify(patch)} -> ${msg}`);
    assert.match(msg, field, `${JSON.stringify(patch)} -> ${msg}`);
  }
});

test("an entry that is not an object, a list that is not an array, a repeated name", () => {
  assert.match(errorOf([entry(), "fal"]), /^UPSTREAMS\[1\]: must be a JSON object/);
  assert.match(errorOf({ name: "x" }), /^UPSTREAMS must be a JSON array/);
  assert.match(
    errorOf([entry({ name: "a" }), entry({ name: "b" }), entry({ name: "a" })]),
    /^UPSTREAMS\[2\] \(name "a"\): field name repeats the name of UPSTREAMS\[0\]/,
  );
});

test("bad JSON names the position and never quotes the text", () => {
  const text = `[{"name": "x", "protocol": "fal", "api_key": "${KEY}" "families": ["imgA"]}]`;
  const msg = errorOf(text);
  assert.match(msg, /^UPSTREAMS is not valid JSON( at line \d+ column \d+| at position \d+)?$/);
  // A token error, whose V8 message quotes the text.
  assert.match(errorOf(`[${KEY}]`), /^UPSTREAMS is not valid JSON/);
});

test("env: keys are read from the environment given", () => {
  const env: Record<string, string> = { FAL_KEY: KEY };
  const [s] = parseUpstreams(JSON.stringify([entry({ api_key: "env:FAL_KEY" })]), (n) => env[n]);
  assert.equal(s?.apiKey, KEY);
  // An empty variable is as good as missing.
  assert.match(errorOf([entry({ api_key: "env:EMPTY" })], (n) => (n === "EMPTY" ? "" : undefined)), /field api_key names the environment variable EMPTY, which is not set/);
  // Through loadConfig: the lookup reads the same environment as the rest of the configuration.
  const config = loadConfig({ UPSTREAMS: JSON.stringify([entry({ api_key: "env:MY_FAL" })]), MY_FAL: "from-env" });
  assert.equal(loadUpstreams(config)[0]?.apiKey, "from-env");
});

test("the file form: a path that does not start with '['", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "gw-upstreams-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "upstreams.json");
  writeFileSync(file, JSON.stringify([entry(), entry({ name: "bfl", protocol: "bfl", families: ["imgB"] })], null, 2));
  const sources = parseUpstreams(file, noEnv);
  assert.deepEqual(
    sources.map((s) => s.name),
    ["fal-main", "bfl"],
  );
  // Inline JSON with leading spaces is still inline.
  assert.equal(parseUpstreams(`  ${JSON.stringify([entry()])}`, noEnv).length, 1);
  assert.match(errorOf(join(dir, "missing.json")), /^UPSTREAMS: cannot read the file '.*missing\.json' \(ENOENT\)/);
  writeFileSync(join(dir, "bad.json"), `[{"api_key": "${KEY}",]`);
  assert.match(errorOf(join(dir, "bad.json")), /^UPSTREAMS is not valid JSON/);
  writeFileSync(join(dir, "bad-entry.json"), JSON.stringify([entry({ protocol: "bfl" })]));
  assert.match(errorOf(join(dir, "bad-entry.json")), /^UPSTREAMS\[0\] \(name "fal-main"\): field families\[0\] 'imgA' cannot be served by protocol bfl/);
});

test("the example file of deploy/ parses with every protocol, env: keys, models and trusted_hosts", () => {
  const env: Record<string, string> = {
    ELEVENLABS_API_KEY: "k1",
    MINIMAX_API_KEY: "k2",
    FAL_KEY: "k3",
    BFL_API_KEY: "k4",
    OPENAI_API_KEY: "k5",
    WHISPER_LAN_KEY: "k6",
  };
  const sources = parseUpstreams(join(import.meta.dirname, "../../deploy/upstreams.example.json"), (n) => env[n]);
  assert.deepEqual([...new Set(sources.map((s) => s.protocol))].sort(), ["bfl", "elevenlabs", "fal", "minimax", "openai"]);
  assert.deepEqual(
    sources.map((s) => s.apiKey),
    ["k1", "k2", "k3", "k4", "k5", "k6"],
  );
  assert.ok(sources.some((s) => Object.keys(s.models).length > 0));
  assert.ok(sources.some((s) => s.trustedHosts.length > 0));
  // Without the variables the start stops, naming the first entry and its key field.
  assert.throws(() => parseUpstreams(join(import.meta.dirname, "../../deploy/upstreams.example.json"), noEnv), {
    message: /^UPSTREAMS\[0\] \(name "elevenlabs"\): field api_key names the environment variable ELEVENLABS_API_KEY/,
  });
});

test("docs/upstreams.md and deploy/README.md show the example file as it is", () => {
  const root = join(import.meta.dirname, "../..");
  const example = readFileSync(join(root, "deploy/upstreams.example.json"), "utf8").trim();
  for (const doc of ["docs/upstreams.md", "deploy/README.md"]) {
    const blocks = [...readFileSync(join(root, doc), "utf8").matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
    assert.ok(blocks.includes(example), `${doc} lacks the example of deploy/upstreams.example.json`);
  }
});

test("TEXT_UPSTREAMS entries join as openai sources after the UPSTREAMS ones", () => {
  const config = loadConfig({
    UPSTREAMS: JSON.stringify([entry({ name: "oa", protocol: "openai", families: ["txtB", "imgC"] })]),
    TEXT_UPSTREAMS: JSON.stringify([
      { name: "fast", baseUrl: "http://127.0.0.1:9/v1/", apiKey: KEY, families: ["txtA"], timeoutMs: 5000 },
      { name: "any", baseUrl: "http://127.0.0.1:10", apiKey: "k2" },
      { name: "fast", baseUrl: "http://127.0.0.1:11", apiKey: "k3", families: ["txtB"] },
    ]),
  });
  const sources = loadUpstreams(config);
  assert.deepEqual(
    sources.map((s) => [s.name, s.protocol, s.origin, s.families]),
    [
      ["oa", "openai", "UPSTREAMS", ["txtB", "imgC"]],
      ["fast", "openai", "TEXT_UPSTREAMS", ["txtA"]],
      ["any", "openai", "TEXT_UPSTREAMS", [...TEXT_FAMILIES]],
      ["fast#2", "openai", "TEXT_UPSTREAMS", ["txtB"]],
    ],
  );
  assert.equal(sources[1]?.baseUrl, "http://127.0.0.1:9/v1");
  assert.equal(sources[1]?.timeoutMs, 5000);
  assert.equal(sources[1]?.apiKey, KEY);
  assert.ok(!JSON.stringify(sources).includes(KEY));
  // TEXT_UPSTREAMS keeps its own parse and field names.
  assert.deepEqual(config.textUpstreams[0], { name: "fast", baseUrl: "http://127.0.0.1:9/v1", apiKey: KEY, families: ["txtA"], timeoutMs: 5000 });
  // Only TEXT_UPSTREAMS: the same list as before, as openai sources.
  assert.deepEqual(
    mergeTextUpstreams([], config.textUpstreams).map((s) => s.name),
    ["fast", "any", "fast#2"],
  );
  // A name used by both settings stops the start.
  assert.throws(
    () => mergeTextUpstreams(parseUpstreams(JSON.stringify([entry({ name: "fast", protocol: "openai", families: ["txtA"] })]), noEnv), config.textUpstreams),
    { message: /^TEXT_UPSTREAMS\[0\] \(name "fast"\): field name is also the name of an UPSTREAMS entry/ },
  );
});

/** Runs `node src/main.ts serve` with `env` until it exits; resolves with its exit code and output. */
function runServe(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["src/main.ts", "serve"], {
      cwd: join(import.meta.dirname, "../.."),
      env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

test("a bad UPSTREAMS stops `node src/main.ts serve` with the message, before the database is opened", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "gw-upstreams-start-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const base = { DATABASE_URL: `sqlite:${join(dir, "gw.db")}`, STORAGE_URL: `file:${join(dir, "blobs")}` };
  const pairing = await runServe({
    ...base,
    UPSTREAMS: JSON.stringify([entry({ name: "el", protocol: "elevenlabs", families: ["alpha"] }), entry({ families: ["beta"] })]),
  });
  assert.equal(pairing.code, 1);
  assert.match(pairing.stderr, /UPSTREAMS\[1\] \(name "fal-main"\): field families\[0\] 'beta' cannot be served by protocol fal/);
  assert.ok(!(pairing.stderr + pairing.stdout).includes(KEY));

  const missing = await runServe({ ...base, UPSTREAMS: JSON.stringify([entry({ api_key: "env:FAL_KEY_UNSET" })]) });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /UPSTREAMS\[0\] \(name "fal-main"\): field api_key names the environment variable FAL_KEY_UNSET, which is not set/);

  const json = await runServe({ ...base, UPSTREAMS: `[{"name": "x", "api_key": "${KEY}",]` });
  assert.equal(json.code, 1);
  assert.match(json.stderr, /UPSTREAMS is not valid JSON/);
  assert.ok(!(json.stderr + json.stdout).includes(KEY));

  // A value only the protocol's adapter can judge (a fal endpoint id) names the entry too.
  const endpoint = await runServe({ ...base, UPSTREAMS: JSON.stringify([entry({ families: ["imgB"], models: { "imgB-2-pro": "../../etc" } })]) });
  assert.equal(endpoint.code, 1);
  assert.match(endpoint.stderr, /UPSTREAMS entry "fal-main" \(protocol fal\): models: the endpoint id of "imgB-2-pro" must look like/);
  assert.ok(!(endpoint.stderr + endpoint.stdout).includes(KEY));
});
