/**
 * Jobs on real sources (D27, D28): failover under one hold, the handle recorded when a source accepts,
 * resume by polling without a second submit (after a stop, and after a lapsed lease), waiting when every
 * source is full, moderation refusals, a source without the upstream model (D35: the next source is tried;
 * none left: the job fails naming the model) and a job a source ended for its input (never moved on). The
 * sources here are in-process fakes of the
 * `VisualJobSource` interface; the protocol adapters have their own contract tests against loopback fakes.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import type { SourceSlot } from "../../src/jobs/durable.ts";
import { createJobChangeFeed } from "../../src/jobs/changes.ts";
import { sweepJobs } from "../../src/jobs/sweep.ts";
import { renderPng } from "../../src/upstreams/simulator/visual.ts";
import {
  type ImageRequest,
  UpstreamError,
  type UpstreamHandle,
  type UpstreamJobState,
  type VisualJobSource,
} from "../../src/upstreams/types.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** How a fake source treats a prompt: read from markers in the prompt, per source. */
type Script = {
  submit?: "ok" | "retryable" | "refuse" | "unsupported" | "slow" | "moderated" | "notfound";
  end?: "ok" | "retryable" | "moderated" | "input" | "notfound";
  polls?: number;
  megapixels?: number;
};

/** An in-process source: records submits, polls and cancels; ends each job after `polls` polls. */
class FakeSource implements VisualJobSource {
  readonly name: string;
  submits: ImageRequest[] = [];
  polls = 0;
  cancels: string[] = [];
  full = false;
  inFlight = 0;
  readonly #jobs = new Map<string, { script: Script; polls: number; prompt: string }>();
  readonly script: (prompt: string) => Script;

  /** Ends request `requestId` on its next poll. */
  finish(requestId: string): void {
    const job = this.#jobs.get(requestId);
    if (job) job.script = { ...job.script, polls: 0 };
  }

  constructor(name: string, script: (prompt: string) => Script) {
    this.name = name;
    this.script = script;
  }

  async submitImage(req: ImageRequest): Promise<UpstreamHandle> {
    const script = this.script(req.prompt);
    if (script.submit === "retryable") throw new UpstreamError(`${this.name}: 503 from upstream`, true);
    if (script.submit === "refuse") throw new UpstreamError(`${this.name}: 422 prompt rejected`, false);
    if (script.submit === "slow") await new Promise((resolve) => setTimeout(resolve, 400));
    if (script.submit === "unsupported") throw new UpstreamError(`${this.name}: takes at most 8 reference images`, false, { unsupported: true });
    // A synchronous source (OpenAI images) refuses the content in the submit call itself.
    if (script.submit === "moderated") throw new UpstreamError(`${this.name}: 400 content_policy_violation`, false, { contentRejected: true });
    // D35: the source says the upstream model (endpoint) does not exist.
    if (script.submit === "notfound") throw new UpstreamError(`${this.name}: 404 no such model`, false, { modelNotFound: true, upstreamModel: `${this.name}/flux-9` });
    this.submits.push(req);
    const requestId = `${this.name}-${this.submits.length}`;
    this.#jobs.set(requestId, { script, polls: 0, prompt: req.prompt });
    return { source: this.name, requestId, urls: { status: `https://${this.name}.example/requests/${requestId}` } };
  }

  async submitVideo(): Promise<UpstreamHandle> {
    throw new UpstreamError("no video here", false);
  }

  async poll(handle: UpstreamHandle): Promise<UpstreamJobState> {
    this.polls++;
    const job = this.#jobs.get(handle.requestId);
    if (!job) return { state: "failed", retryable: false, contentRejected: false, message: "unknown request" };
    job.polls++;
    if (job.polls < (job.script.polls ?? 1)) return { state: "running", progress: job.polls / (job.script.polls ?? 1) };
    if (job.script.end === "retryable") return { state: "failed", retryable: true, contentRejected: false, message: "worker crashed" };
    if (job.script.end === "moderated") return { state: "failed", retryable: false, contentRejected: true, message: "flagged" };
    // The source ended the job for its input (fal COMPLETED with `error_type`, BFL `Error`): not retryable.
    if (job.script.end === "input") return { state: "failed", retryable: false, contentRejected: false, message: "422 image_size is invalid" };
    if (job.script.end === "notfound") throw new UpstreamError(`${this.name}: 404 no such model`, false, { modelNotFound: true, upstreamModel: `${this.name}/flux-9` });
    const png = renderPng({ prompt: job.prompt, width: 64, height: 64, index: 0 });
    return {
      state: "succeeded",
      outputs: [{ kind: "bytes", contentType: "image/png", body: png }],
      durationSec: null,
      megapixels: job.script.megapixels ?? null,
      upstreamCostUsd: 0.03,
    };
  }

  async cancel(handle: UpstreamHandle): Promise<void> {
    this.cancels.push(handle.requestId);
  }

  slot(): SourceSlot {
    return {
      name: this.name,
      source: this,
      tryAcquire: () => {
        if (this.full) return false;
        this.inFlight++;
        return true;
      },
      release: () => {
        this.inFlight--;
      },
      call: (fn) => fn(),
    };
  }
}

/** Markers: `first:<submit>/<end>` and `second:<submit>/<end>` in the prompt script each source. */
function scriptFor(name: string) {
  return (prompt: string): Script => {
    const m = new RegExp(`${name}:(\\w+)/(\\w+)`).exec(prompt);
    const polls = /polls:(\d+)/.exec(prompt);
    const mp = /mp:(\d+)/.exec(prompt);
    return {
      submit: (m?.[1] as Script["submit"]) ?? "ok",
      end: (m?.[2] as Script["end"]) ?? "ok",
      polls: polls ? Number(polls[1]) : 1,
      ...(mp ? { megapixels: Number(mp[1]) } : {}),
    };
  };
}

for (const { name: backend, skip } of BACKENDS) {
  describe(`jobs on real sources (${backend})`, { skip }, () => {
    let gw: TestGateway;
    let first: FakeSource;
    let second: FakeSource;

    before(async () => {
      first = new FakeSource("first", scriptFor("first"));
      second = new FakeSource("second", scriptFor("second"));
      const slots = () => [first.slot(), second.slot()];
      gw = await startGateway(backend, {}, {
        overrides: {
          jobSources: {
            sourcesFor: (job) => (job.model.startsWith("imgB") ? slots() : []),
            sourceNamed: (name) => slots().find((s) => s.name === name),
          },
        },
        runner: { pollMs: 20, heartbeatMs: 20, leaseMs: 400, upstreamPoll: { pollMs: 10, backoffMaxMs: 50 } },
      });
    });
    after(() => gw?.close());

    async function submit(prompt: string, model = "imgB-1.1-ultra") {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model, prompt } });
      assert.equal(r.status, 202, JSON.stringify(r.json));
      return { u, id: r.json.id as string, hold: Math.round(r.json.hold_usd * 1e6) };
    }
    async function ledgerKinds(userId: string): Promise<string[]> {
      const rows = await gw.services.db.kysely.selectFrom("ledger_entries").select("kind").where("account_id", "=", userId).orderBy("seq").execute();
      return rows.map((r) => r.kind);
    }
    async function row(id: string) {
      return gw.services.db.kysely.selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    }

    test("the first source serves: charged once, handle recorded, layer 0, upstream cost kept", async () => {
      const before = first.submits.length;
      const { u, id, hold } = await submit("a lighthouse polls:3");
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.fallback_layer, 0);
      assert.equal(first.submits.length, before + 1);
      const r = await row(id);
      assert.equal(r.upstream_source, "first");
      assert.equal((JSON.parse(r.upstream_handle_json ?? "{}") as UpstreamHandle).source, "first");
      assert.equal(Number(r.upstream_cost_micros), 30_000);
      assert.deepEqual((await ledgerKinds(u.org_id)).slice(-3), ["hold", "hold_release", "charge"]);
      assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000 - hold);
      assert.equal(await ledgerSum(gw.services.db.kysely, u.org_id), 500_000 - hold);
    });

    test("a retryable submit failure moves to the next source under the same hold", async () => {
      const { u, id, hold } = await submit("first:retryable/ok");
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.fallback_layer, 1);
      assert.equal((await row(id)).upstream_source, "second");
      const kinds = await ledgerKinds(u.org_id);
      assert.equal(kinds.filter((k) => k === "hold").length, 1);
      assert.equal(kinds.filter((k) => k === "charge").length, 1);
      assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000 - hold);
    });

    test("a source that does not serve the request is skipped for the next; none serving ends provider_error", async () => {
      const firstBefore = first.submits.length;
      const { u, id, hold } = await submit("first:unsupported/ok");
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.fallback_layer, 1);
      assert.equal(first.submits.length, firstBefore);
      assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000 - hold);

      const none = await submit("first:unsupported/ok second:unsupported/ok");
      const failed = await gw.waitForJob(none.u.api_key, none.id);
      assert.equal(failed.json.status, "failed", JSON.stringify(failed.json));
      assert.equal(failed.json.error.code, "provider_error");
      assert.match(failed.json.error.message, /^No upstream source serves this request: first: takes at most 8 reference images/);
      assert.equal(await getBalance(gw.services.db.kysely, none.u.org_id), 500_000);
      assert.equal(await ledgerSum(gw.services.db.kysely, none.u.org_id), 500_000);
    });

    test("a long submit (a synchronous source at work) keeps the job's heartbeat going", async () => {
      const { u, id } = await submit("first:slow/ok");
      let claimedAt = 0;
      let beatDuringSubmit = 0;
      for (let i = 0; i < 200 && first.submits.every((r) => !r.prompt.includes("first:slow")); i++) {
        const r = await row(id);
        if (r.status === "processing" && r.upstream_handle_json === null) {
          claimedAt ||= Number(r.started_at);
          beatDuringSubmit = Math.max(beatDuringSubmit, Number(r.heartbeat_at));
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(claimedAt > 0, "the job was seen in its submit");
      assert.ok(beatDuringSubmit > claimedAt, "a heartbeat was written while the submit ran");
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    });

    test("a job the source failed for its own reasons moves to the next source; one charge", async () => {
      const secondBefore = second.submits.length;
      const { u, id } = await submit("first:ok/retryable");
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.fallback_layer, 1);
      assert.equal(second.submits.length, secondBefore + 1);
      const kinds = await ledgerKinds(u.org_id);
      assert.equal(kinds.filter((k) => k === "charge").length, 1);
    });

    test("a refused input ends provider_error, a moderation refusal content_rejected; both release the hold", async () => {
      for (const [prompt, code] of [
        ["first:refuse/ok", "provider_error"],
        ["first:ok/moderated", "content_rejected"],
        ["first:moderated/ok", "content_rejected"],
        ["first:retryable/ok second:retryable/ok", "provider_error"],
      ] as const) {
        const secondBefore = second.submits.length;
        const { u, id } = await submit(prompt);
        const done = await gw.waitForJob(u.api_key, id);
        assert.equal(done.json.status, "failed", JSON.stringify(done.json));
        assert.equal(done.json.error.code, code, prompt);
        assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
        assert.equal(await ledgerSum(gw.services.db.kysely, u.org_id), 500_000);
        assert.doesNotMatch(done.json.error.message, /Bearer|Key /);
        if (!prompt.includes("second:")) assert.equal(second.submits.length, secondBefore, `${prompt}: no failover`);
      }
    });

    test("D35: a source without the upstream model is skipped for the next under the same hold; a poll saying so too", async () => {
      for (const prompt of ["first:notfound/ok", "first:ok/notfound"]) {
        const secondBefore = second.submits.length;
        const { u, id, hold } = await submit(prompt);
        const done = await gw.waitForJob(u.api_key, id);
        assert.equal(done.json.status, "succeeded", `${prompt}: ${JSON.stringify(done.json)}`);
        assert.equal(done.json.fallback_layer, 1, prompt);
        assert.equal((await row(id)).upstream_source, "second", prompt);
        assert.equal(second.submits.length, secondBefore + 1, prompt);
        const kinds = await ledgerKinds(u.org_id);
        assert.deepEqual(kinds.slice(1), ["hold", "hold_release", "charge"], `${prompt}: one hold, one charge`);
        assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000 - hold);
      }
    });

    test("D35: no source left with the model: failed provider_error naming the model and the upstream id, nothing charged", async () => {
      for (const prompt of ["first:notfound/ok second:notfound/ok", "first:ok/notfound second:ok/notfound", "first:unsupported/ok second:notfound/ok"]) {
        const { u, id } = await submit(prompt);
        const done = await gw.waitForJob(u.api_key, id);
        assert.equal(done.json.status, "failed", `${prompt}: ${JSON.stringify(done.json)}`);
        assert.equal(done.json.error.code, "provider_error", prompt);
        assert.match(done.json.error.message, /^No upstream source serves imgB-1\.1-ultra: the source answered that its upstream model second\/flux-9 does not exist\. The hold was released\.$/, prompt);
        assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
        assert.equal(await ledgerSum(gw.services.db.kysely, u.org_id), 500_000);
        assert.deepEqual((await ledgerKinds(u.org_id)).slice(1), ["hold", "hold_release"], prompt);
      }
    });

    test("D35: a source without the model and the other one full: the job waits for the full one", async () => {
      second.full = true;
      const { u, id } = await submit("first:notfound/ok");
      try {
        for (let i = 0; i < 400 && (await row(id)).not_before === null; i++) await new Promise((r) => setTimeout(r, 10));
        assert.equal((await row(id)).status, "pending");
      } finally {
        second.full = false;
      }
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.fallback_layer, 1);
    });

    test("D27, D35: a job the source ended for its input is not moved to the next source: failed provider_error, nothing charged", async () => {
      const secondBefore = second.submits.length;
      const { u, id } = await submit("first:ok/input");
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "failed", JSON.stringify(done.json));
      assert.equal(done.json.error.code, "provider_error");
      assert.match(done.json.error.message, /422 image_size is invalid/);
      assert.equal(done.json.fallback_layer, 0);
      assert.equal(second.submits.length, secondBefore, "nothing sent to the next source");
      assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
      assert.equal(await ledgerSum(gw.services.db.kysely, u.org_id), 500_000);
    });

    test("imgB-2-pro is charged for the megapixels the source reports (D26)", async () => {
      const one = await submit("mp:1", "imgB-2-pro");
      const doneOne = await gw.waitForJob(one.u.api_key, one.id);
      assert.equal(doneOne.json.status, "succeeded", JSON.stringify(doneOne.json));
      assert.ok(doneOne.json.cost_usd <= doneOne.json.hold_usd);
      assert.equal(doneOne.json.cost_usd, 0.041);
    });

    test("when every source is full the job waits in its queue, then runs", async () => {
      first.full = true;
      second.full = true;
      const submits = first.submits.length + second.submits.length;
      const { u, id } = await submit("waiting");
      try {
        for (let i = 0; i < 400 && (await row(id)).not_before === null; i++) await new Promise((r) => setTimeout(r, 10));
        const waiting = await row(id);
        assert.equal(waiting.status, "pending");
        assert.ok(Number(waiting.not_before) > 0);
        assert.equal(first.submits.length + second.submits.length, submits, "nothing submitted while full");
      } finally {
        first.full = false;
        second.full = false;
      }
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    });

    test("a job whose runner died is taken over after its lease and resumed by polling, never resubmitted", async () => {
      const db = gw.services.db.kysely;
      const { u, id, hold } = await submit("first:ok/ok polls:1000000");
      // Wait until the source accepted it, then make its runner look dead: another worker id, an old heartbeat.
      for (let i = 0; i < 400 && (await row(id)).upstream_handle_json === null; i++) await new Promise((r) => setTimeout(r, 10));
      const submitsBefore = first.submits.length;
      await db.updateTable("jobs").set({ worker_id: "dead-worker", heartbeat_at: Date.now() - 10_000 }).where("id", "=", id).execute();
      // The runner of this process sees it lost the job (its heartbeat no longer matches) and stops;
      // once the lease lapsed, it takes the job over as a new claim and polls the same handle.
      for (let i = 0; i < 500 && (await row(id)).worker_id === "dead-worker"; i++) await new Promise((r) => setTimeout(r, 10));
      const taken = await row(id);
      assert.notEqual(taken.worker_id, "dead-worker");
      assert.equal(taken.status, "processing");
      // Let it finish: the fake ends the job on its next poll.
      finishNow(first, taken.upstream_handle_json);
      const done = await gw.waitForJob(u.api_key, id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(first.submits.length, submitsBefore, "no second submit");
      assert.equal(await getBalance(db, u.org_id), 500_000 - hold);
    });

    test("the sweep refunds a job with no heartbeat and hands its handle back for an upstream cancel", async () => {
      // A gateway without a runner, so no runner takes the lapsed job over before the sweep sees it.
      const quiet = await startGateway(backend, {}, { runner: false });
      try {
        const db = quiet.services.db.kysely;
        const u = await quiet.register();
        const r = await quiet.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgB-1.1-ultra", prompt: "x" } });
        const handle: UpstreamHandle = { source: "first", requestId: "first-77", urls: {} };
        await db
          .updateTable("jobs")
          .set({ status: "processing", worker_id: "dead-worker", started_at: 1, heartbeat_at: 1, upstream_source: "first", upstream_handle_json: JSON.stringify(handle) })
          .where("id", "=", r.json.id)
          .execute();
        const res = await sweepJobs(db, { sweepImageAfterS: 60, sweepVideoAfterS: 60, sweepSyncHoldsAfterS: 3600 }, createJobChangeFeed());
        assert.deepEqual(res.upstreamToCancel, [handle]);
        const job = await db.selectFrom("jobs").select(["status", "error_code"]).where("id", "=", r.json.id).executeTakeFirstOrThrow();
        assert.deepEqual({ ...job }, { status: "refunded", error_code: "worker_lost" });
        assert.equal(await getBalance(db, u.org_id), 500_000);
        assert.equal(await ledgerSum(db, u.org_id), 500_000);
      } finally {
        await quiet.close();
      }
    });
  });
}

/** Makes the fake end the job of `handleJson` on its next poll. */
function finishNow(source: FakeSource, handleJson: string | null) {
  if (!handleJson) return;
  source.finish((JSON.parse(handleJson) as UpstreamHandle).requestId);
}
