/**
 * The source registry (src/upstreams/registry.ts, D25, D27): the circuit opens after 5 consecutive
 * retryable failures and lets one trial through after 30 s, a success resets the count, a non-retryable
 * failure neither counts nor resets; a source at max_concurrency is skipped, not failed; statistics of
 * the last 5 minutes; a source without the upstream model (D35) is a failure that never opens the circuit;
 * each source's `last_error` (D35). Time is Node's mocked `Date` (no test waits 30 s).
 */
import { afterEach, beforeEach, describe, mock, test } from "node:test";
import assert from "node:assert/strict";
import type { UpstreamSource } from "../../src/upstreams/config.ts";
import { CallWindow, ConcurrencyGate, describeFailure, LAST_ERROR_MESSAGE_CHARS, SourceUnavailableError, UpstreamRegistry } from "../../src/upstreams/registry.ts";
import { UpstreamError } from "../../src/upstreams/types.ts";

const KEY = "sk-registry-SECRET-42";

function source(name: string, patch: Partial<UpstreamSource> = {}): UpstreamSource {
  return {
    name,
    protocol: "fal",
    baseUrl: "https://queue.example",
    apiKey: KEY,
    families: ["imgA"],
    models: {},
    timeoutMs: null,
    maxConcurrency: null,
    trustedHosts: [],
    origin: "UPSTREAMS",
    ...patch,
  };
}

const retryable = () => Promise.reject(new UpstreamError("503 from upstream", true));
const rejected = () => Promise.reject(new UpstreamError("400: prompt refused", false));
const ok = () => Promise.resolve("done");

/** Runs `fn` on `name`, returning "ok", the refusal reason, or "error". */
async function attempt(reg: UpstreamRegistry, name: string, fn: () => Promise<unknown>): Promise<string> {
  try {
    await reg.run(name, fn);
    return "ok";
  } catch (err) {
    if (err instanceof SourceUnavailableError) return err.reason;
    if (err instanceof UpstreamError) return err.retryable ? "retryable" : "rejected";
    return "error";
  }
}

describe("circuit (D27)", () => {
  beforeEach(() => mock.timers.enable({ apis: ["Date"], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  test("opens after 5 consecutive retryable failures; refuses at once while open", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 4; i++) assert.equal(await attempt(reg, "a", retryable), "retryable");
    assert.equal(reg.get("a")?.circuit, "closed");
    assert.equal(await attempt(reg, "a", retryable), "retryable");
    assert.equal(reg.get("a")?.circuit, "open");
    let called = false;
    assert.equal(
      await attempt(reg, "a", async () => {
        called = true;
        return 1;
      }),
      "circuit_open",
    );
    assert.equal(called, false, "an open circuit does not call the source");
    const err = await reg.run("a", ok).catch((e: unknown) => e);
    assert.ok(err instanceof SourceUnavailableError && err.retryable, "the refusal is retryable: the next source is tried");
    assert.equal(reg.get("a")?.available(), false);
  });

  test("after 30 s one trial goes through: success closes, failure reopens for another 30 s", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 5; i++) await attempt(reg, "a", retryable);
    mock.timers.tick(29_999);
    assert.equal(reg.get("a")?.circuit, "open");
    assert.equal(await attempt(reg, "a", ok), "circuit_open");
    mock.timers.tick(1);
    assert.equal(reg.get("a")?.circuit, "half_open");
    assert.equal(reg.get("a")?.available(), true);

    // The trial fails: open again, for 30 s more.
    assert.equal(await attempt(reg, "a", retryable), "retryable");
    assert.equal(reg.get("a")?.circuit, "open");
    mock.timers.tick(29_000);
    assert.equal(await attempt(reg, "a", ok), "circuit_open");
    mock.timers.tick(1_000);

    // One trial only: while it is in flight, other calls are refused (not queued).
    let finish!: (v: string) => void;
    const trial = reg.run("a", () => new Promise<string>((r) => (finish = r)));
    assert.equal(reg.get("a")?.circuit, "half_open");
    assert.equal(await attempt(reg, "a", ok), "circuit_open");
    finish("trial ok");
    assert.equal(await trial, "trial ok");
    assert.equal(reg.get("a")?.circuit, "closed");
    assert.equal(await attempt(reg, "a", ok), "ok");
  });

  test("a success resets the count of consecutive failures", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 4; i++) await attempt(reg, "a", retryable);
    assert.equal(await attempt(reg, "a", ok), "ok");
    for (let i = 0; i < 4; i++) await attempt(reg, "a", retryable);
    assert.equal(reg.get("a")?.circuit, "closed", "4 + success + 4 is not 5 in a row");
    await attempt(reg, "a", retryable);
    assert.equal(reg.get("a")?.circuit, "open");
  });

  test("a non-retryable failure neither counts nor resets", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 20; i++) assert.equal(await attempt(reg, "a", rejected), "rejected");
    assert.equal(reg.get("a")?.circuit, "closed", "input refusals never open the circuit");
    for (let i = 0; i < 4; i++) await attempt(reg, "a", retryable);
    assert.equal(await attempt(reg, "a", rejected), "rejected");
    assert.equal(reg.get("a")?.circuit, "closed");
    await attempt(reg, "a", retryable);
    assert.equal(reg.get("a")?.circuit, "open", "the refusal did not reset: 4 + 1 retryable failures in a row");
  });

  test("a request the source does not serve counts nowhere: not in the circuit, not as a failure", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    const unsupported = () => Promise.reject(new UpstreamError("takes at most 8 reference images", true, { unsupported: true }));
    for (let i = 0; i < 8; i++) assert.equal(await attempt(reg, "a", unsupported), "rejected");
    assert.equal(reg.get("a")?.circuit, "closed");
    assert.equal(reg.snapshot()[0]?.failures, 0);
  });

  test("errors that are not UpstreamError pass through uncounted by the circuit", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 8; i++) assert.equal(await attempt(reg, "a", () => Promise.reject(new TypeError("bug"))), "error");
    assert.equal(reg.get("a")?.circuit, "closed");
  });

  test("circuits are per source; the threshold and delay are configurable", async () => {
    const reg = new UpstreamRegistry([source("a"), source("b")], { failureThreshold: 2, halfOpenAfterMs: 100 });
    await attempt(reg, "a", retryable);
    await attempt(reg, "a", retryable);
    assert.equal(reg.get("a")?.circuit, "open");
    assert.equal(reg.get("b")?.circuit, "closed");
    assert.equal(await attempt(reg, "b", ok), "ok");
    mock.timers.tick(100);
    assert.equal(await attempt(reg, "a", ok), "ok");
    assert.equal(reg.get("a")?.circuit, "closed");
  });
});

describe("concurrency gate (D27)", () => {
  test("tryAcquire/release count slots up to the limit", () => {
    const gate = new ConcurrencyGate(2);
    assert.equal(gate.tryAcquire(), true);
    assert.equal(gate.tryAcquire(), true);
    assert.equal(gate.tryAcquire(), false);
    assert.equal(gate.inFlight, 2);
    gate.release();
    assert.equal(gate.tryAcquire(), true);
    gate.release();
    gate.release();
    assert.equal(gate.inFlight, 0);
    assert.throws(() => gate.release());
    const open = new ConcurrencyGate(null);
    for (let i = 0; i < 1000; i++) assert.equal(open.tryAcquire(), true);
  });

  test("a source at max_concurrency is skipped (busy), not failed; the slot comes back after the call", async () => {
    const reg = new UpstreamRegistry([source("a", { maxConcurrency: 2 })]);
    const releases: (() => void)[] = [];
    const hold = () => new Promise<string>((r) => releases.push(() => r("held")));
    const p1 = reg.run("a", hold);
    const p2 = reg.run("a", hold);
    assert.equal(reg.get("a")?.gate.inFlight, 2);
    assert.equal(reg.snapshot()[0]?.in_flight, 2);
    assert.equal(reg.get("a")?.available(), false);
    for (let i = 0; i < 10; i++) assert.equal(await attempt(reg, "a", ok), "busy");
    // Skips are no failures: neither the statistics nor the circuit saw them.
    assert.equal(reg.snapshot()[0]?.failures, 0);
    assert.equal(reg.get("a")?.circuit, "closed");
    for (const r of releases) r();
    assert.deepEqual(await Promise.all([p1, p2]), ["held", "held"]);
    assert.equal(reg.get("a")?.gate.inFlight, 0);
    assert.equal(await attempt(reg, "a", ok), "ok");
    // A failing call gives its slot back too.
    await attempt(reg, "a", retryable);
    assert.equal(reg.get("a")?.gate.inFlight, 0);
  });
});

describe("statistics (D25)", () => {
  beforeEach(() => mock.timers.enable({ apis: ["Date"], now: 50_000_000 }));
  afterEach(() => mock.timers.reset());

  test("successes, failures and p50 of the last 5 minutes", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    const took = (ms: number) => async () => {
      mock.timers.tick(ms);
      return ms;
    };
    for (const ms of [100, 300, 200]) await reg.run("a", took(ms));
    await attempt(reg, "a", retryable);
    await attempt(reg, "a", rejected);
    let row = reg.snapshot()[0];
    assert.deepEqual(
      { successes: row?.successes, failures: row?.failures, p50_ms: row?.p50_ms, p95_ms: row?.p95_ms },
      { successes: 3, failures: 2, p50_ms: 200, p95_ms: 300 },
    );
    mock.timers.tick(4 * 60_000);
    for (const ms of [1000, 1000]) await reg.run("a", took(ms));
    row = reg.snapshot()[0];
    assert.deepEqual({ successes: row?.successes, failures: row?.failures, p50_ms: row?.p50_ms, p95_ms: row?.p95_ms }, { successes: 5, failures: 2, p50_ms: 300, p95_ms: 1000 });
    // 5 minutes after the first calls they have left the window; the last two remain.
    mock.timers.tick(60_000 + 20_000);
    row = reg.snapshot()[0];
    assert.deepEqual({ successes: row?.successes, failures: row?.failures, p50_ms: row?.p50_ms }, { successes: 2, failures: 0, p50_ms: 1000 });
    assert.equal(row?.p95_ms, 1000);
    mock.timers.tick(5 * 60_000);
    row = reg.snapshot()[0];
    assert.deepEqual({ successes: row?.successes, failures: row?.failures, p50_ms: row?.p50_ms }, { successes: 0, failures: 0, p50_ms: null });
    assert.equal(row?.p95_ms, null);
  });

  test("the window's edge: an event stays at most 5 minutes", () => {
    const w = new CallWindow(300_000);
    w.success(10, 0);
    w.failure(0);
    assert.deepEqual(w.read(299_999), { successes: 1, failures: 1, p50Ms: 10, p95Ms: 10 });
    assert.deepEqual(w.read(300_000), { successes: 0, failures: 0, p50Ms: null, p95Ms: null });
    // Buckets are reused as time goes round.
    w.success(20, 600_000);
    assert.deepEqual(w.read(600_001), { successes: 1, failures: 0, p50Ms: 20, p95Ms: 20 });
  });

  test("a caller's abort is not counted as a failure", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(reg.run("a", () => Promise.reject(new Error("aborted")), ac.signal));
    assert.equal(reg.snapshot()[0]?.failures, 0);
  });
});

describe("registry", () => {
  test("sourcesFor lists a family's sources in configuration order; snapshot rows hold no key", () => {
    const reg = new UpstreamRegistry([
      source("fal-1", { families: ["imgA", "imgB"] }),
      source("bfl-1", { protocol: "bfl", families: ["imgB"] }),
      source("fal-2", { families: ["imgB", "vidA"], maxConcurrency: 3 }),
    ]);
    assert.deepEqual(
      reg.sourcesFor("imgB").map((s) => s.name),
      ["fal-1", "bfl-1", "fal-2"],
    );
    assert.deepEqual(
      reg.sourcesFor("vidA").map((s) => s.name),
      ["fal-2"],
    );
    assert.deepEqual(reg.sourcesFor("alpha"), []);
    const rows = reg.snapshot();
    assert.deepEqual(rows[1], {
      name: "bfl-1",
      protocol: "bfl",
      families: ["imgB"],
      circuit: "closed",
      in_flight: 0,
      successes: 0,
      failures: 0,
      p50_ms: null,
      p95_ms: null,
      last_error: null,
    });
    assert.ok(!JSON.stringify(rows).includes(KEY));
    assert.ok(!JSON.stringify(rows).includes("queue.example"));
  });

  test("run needs a source of this registry; names must be unique", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    await assert.rejects(reg.run("nope", ok), /unknown source nope/);
    const other = new UpstreamRegistry([source("a")]);
    await assert.rejects(reg.run(other.get("a")!, ok), /unknown source a/);
    assert.equal(await reg.run(reg.get("a")!, ok), "done");
    assert.throws(() => new UpstreamRegistry([source("a"), source("a")]), /unique/);
  });

  test("refusal errors name the source, never its key", async () => {
    const reg = new UpstreamRegistry([source("a", { maxConcurrency: 1 })], { failureThreshold: 1 });
    let finish!: () => void;
    const held = reg.run("a", () => new Promise<void>((r) => (finish = r)));
    const busy = await reg.run("a", ok).catch((e: unknown) => e);
    assert.ok(busy instanceof SourceUnavailableError);
    assert.match(busy.message, /source a is at its max_concurrency/);
    finish();
    await held;
    await attempt(reg, "a", retryable);
    const open = await reg.run("a", ok).catch((e: unknown) => e);
    assert.ok(open instanceof SourceUnavailableError);
    assert.match(open.message, /circuit of source a is open/);
    for (const e of [busy, open]) assert.ok(!String((e as Error).message).includes(KEY));
  });
});

describe("half-open trial ending in an input refusal", () => {
  beforeEach(() => mock.timers.enable({ apis: ["Date"], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  test("closes the circuit: the source answered (cockatiel's rule, documented in registry.ts)", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 5; i++) await attempt(reg, "a", retryable);
    mock.timers.tick(30_000);
    assert.equal(await attempt(reg, "a", rejected), "rejected");
    assert.equal(reg.get("a")?.circuit, "closed");
  });
});

describe("a source without the upstream model (D35)", () => {
  beforeEach(() => mock.timers.enable({ apis: ["Date"], now: Date.parse("2026-11-20T10:00:00Z") }));
  afterEach(() => mock.timers.reset());

  const notFound = (id = "gpt-image-1") => () => Promise.reject(new UpstreamError(`404 model_not_found: The model ${id} does not exist`, false, { modelNotFound: true, upstreamModel: id }));

  test("non-retryable: never opens the circuit, counts as a failure, is the last_error, logs a warning naming source and id", async () => {
    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const reg = new UpstreamRegistry([source("a")], { failureThreshold: 2, log: { warn: (fields, message) => warnings.push({ fields, message }) } });
    const err = await reg.run("a", notFound()).catch((e: unknown) => e);
    assert.ok(err instanceof UpstreamError && err.modelNotFound && !err.retryable);
    for (let i = 0; i < 10; i++) assert.equal(await attempt(reg, "a", notFound()), "rejected");
    assert.equal(reg.get("a")?.circuit, "closed", "a healthy source without one model keeps its circuit closed");
    assert.equal(await attempt(reg, "a", ok), "ok", "other models on the source work");
    const row = reg.snapshot()[0]!;
    assert.equal(row.failures, 11);
    assert.equal(row.successes, 1);
    assert.deepEqual(row.last_error, { code: "model_not_found", message: "404 model_not_found: The model gpt-image-1 does not exist", at: "2026-11-20T10:00:00.000Z" });
    assert.equal(warnings.length, 11);
    assert.deepEqual(warnings[0]!.fields, { source: "a", upstream_model: "gpt-image-1" });
    assert.match(warnings[0]!.message, /source a .*gpt-image-1/);
    assert.ok(!JSON.stringify(warnings).includes(KEY));
  });

  test("it neither counts toward nor resets the count of retryable failures", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    for (let i = 0; i < 4; i++) await attempt(reg, "a", retryable);
    await attempt(reg, "a", notFound());
    assert.equal(reg.get("a")?.circuit, "closed");
    await attempt(reg, "a", retryable);
    assert.equal(reg.get("a")?.circuit, "open");
  });
});

describe("last_error (D35)", () => {
  beforeEach(() => mock.timers.enable({ apis: ["Date"], now: Date.parse("2026-11-20T10:00:00Z") }));
  afterEach(() => mock.timers.reset());

  /** An adapter error as the keyed adapters raise it: `kind` and `status` beside the flags. */
  function adapterError(message: string, fields: { kind: string; status?: number | null; retryable?: boolean; contentRejected?: boolean }): UpstreamError {
    return Object.assign(new UpstreamError(message, fields.retryable ?? true, { contentRejected: fields.contentRejected ?? false }), { kind: fields.kind, status: fields.status ?? null });
  }

  test("the latest failure of any kind, with a code per kind; a success keeps it; refusals and unsupported requests are no failure", async () => {
    const reg = new UpstreamRegistry([source("a", { maxConcurrency: 1 })], { failureThreshold: 100 });
    assert.equal(reg.snapshot()[0]!.last_error, null);
    const cases: [UpstreamError | Error, string][] = [
      [adapterError("fal answered 503: overloaded", { kind: "http", status: 503 }), "http_503"],
      [adapterError("the call took longer than 30000 ms", { kind: "timeout" }), "timeout"],
      [adapterError("connection refused", { kind: "network" }), "network_error"],
      [adapterError("the answer is not JSON", { kind: "malformed" }), "malformed_answer"],
      [adapterError("moderation: refused", { kind: "http", status: 400, retryable: false, contentRejected: true }), "content_rejected"],
      [adapterError("400: bad prompt", { kind: "http", status: 422, retryable: false }), "http_422"],
      [new UpstreamError("something else", true), "upstream_error"],
      [new UpstreamError("the voice is gone", false, { voiceUnavailable: true }), "voice_unavailable"],
      [new UpstreamError("no such endpoint fal-ai/veo3", false, { modelNotFound: true, upstreamModel: "fal-ai/veo3" }), "model_not_found"],
      [new TypeError("a bug"), "internal_error"],
    ];
    for (const [err, code] of cases) {
      mock.timers.tick(1000);
      await attempt(reg, "a", () => Promise.reject(err));
      const last = reg.snapshot()[0]!.last_error;
      assert.equal(last?.code, code, err.message);
      assert.equal(last?.message, err.message);
      assert.equal(last?.at, new Date(Date.now()).toISOString());
    }
    const before = reg.snapshot()[0]!.last_error;
    await attempt(reg, "a", ok);
    await attempt(reg, "a", () => Promise.reject(new UpstreamError("takes at most 8 references", true, { unsupported: true })));
    const ac = new AbortController();
    ac.abort();
    await reg.run("a", () => Promise.reject(new Error("aborted")), ac.signal).catch(() => {});
    let finish!: () => void;
    const held = reg.run("a", () => new Promise<void>((r) => (finish = r)));
    assert.equal(await attempt(reg, "a", ok), "busy");
    finish();
    await held;
    assert.deepEqual(reg.snapshot()[0]!.last_error, before, "kept: a success, an unsupported request, the caller's abort and a refusal change nothing");
  });

  test("the message never shows the key or a URL (only its path); one line, at most 200 characters", async () => {
    const reg = new UpstreamRegistry([source("a")]);
    const raw = `GET https://user:${KEY}@queue.example/requests/1?key=${KEY}&x=1#frag failed\n  with ${KEY} at http://10.0.0.1:8080/v1/x?token=abc`;
    await attempt(reg, "a", () => Promise.reject(new UpstreamError(raw, true)));
    const last = reg.snapshot()[0]!.last_error!;
    assert.equal(last.message, "GET /requests/1 failed with [redacted] at /v1/x");
    await attempt(reg, "a", () => Promise.reject(new UpstreamError("x".repeat(500), true)));
    assert.equal(reg.snapshot()[0]!.last_error!.message.length, LAST_ERROR_MESSAGE_CHARS);
    assert.equal(describeFailure(new UpstreamError(`key ${KEY}`, true), KEY, 0).message, "key [redacted]");
  });
});
