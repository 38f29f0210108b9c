/**
 * The fal dialect (D38) proven with `@fal-ai/client` itself, configured only with `credentials` and
 * `proxyUrl` (`when: "always"`), against a real gateway on loopback: `subscribe` for an image and a video
 * endpoint, `queue.submit` / `status` / `result` / `cancel`, `run`, an unknown endpoint, an input fal would
 * refuse and a refused target, with exact money after each (balance, ledger sum, the job's usage record).
 * Once on the simulator, once with a `fal` source (its loopback fake) behind the gateway, where the
 * endpoint and input reach the fake as the client sent them.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ApiError, createFalClient, type FalClient, ValidationError } from "@fal-ai/client";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { pngDimensions } from "../../src/upstreams/media-probe.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const FAL_KEY = "fal-test-key-0123456789abcdef";
/** Reference-image hosts resolve to a public address (there is no DNS here). */
const PUBLIC_HOST = async (): Promise<string[]> => ["93.184.216.34"];

/** The fal client of one gateway key: only `credentials` and `proxyUrl`, as a developer configures it. */
function falFor(gw: TestGateway, key: string): FalClient {
  return createFalClient({ credentials: key, proxyUrl: { url: `${gw.url}/fal/proxy`, when: "always" } });
}

/** An endpoint id typed as any string: the client then takes any input (the tests send inputs fal refuses). */
const ANY_ENDPOINT = (id: string): string => id;

/** The error a call must fail with. */
async function failure(call: Promise<unknown>): Promise<ApiError<{ detail: unknown; error_type?: string }>> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof ApiError, `an ApiError: ${String(err)}`);
    return err as ApiError<{ detail: unknown; error_type?: string }>;
  }
  assert.fail("the call succeeded");
}

interface Images {
  images: { url: string; width?: number; height?: number; content_type: string }[];
}
interface Video {
  video: { url: string; content_type: string; file_size?: number };
}

/** The checks both gateways share (simulator or fal source behind). */
function money(gw: () => TestGateway) {
  const db = () => gw().services.db.kysely;
  return {
    async balance(userId: string): Promise<number> {
      const row = await db().selectFrom("accounts").select("balance_micros").where("id", "=", userId).executeTakeFirstOrThrow();
      return Number(row.balance_micros);
    },
    async ledgerSum(userId: string): Promise<number> {
      const row = await db()
        .selectFrom("ledger_entries")
        .select((eb) => eb.fn.sum<number | string>("amount_micros").as("s"))
        .where("account_id", "=", userId)
        .executeTakeFirst();
      return Number(row?.s ?? 0);
    },
    async job(id: string) {
      return db().selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    },
    async usage(jobId: string) {
      return db().selectFrom("usage_records").selectAll().where("job_id", "=", jobId).executeTakeFirstOrThrow();
    },
    /** Balance moved by exactly `cost`, the ledger agrees, and the job's usage record says the same. */
    async charged(userId: string, before: number, jobId: string, status: "succeeded" | "failed"): Promise<number> {
      const job = await this.job(jobId);
      const usage = await this.usage(jobId);
      const cost = Number(job.cost_micros ?? 0);
      if (status === "succeeded") assert.ok(cost > 0, "charged");
      else assert.equal(cost, 0, "nothing charged");
      const after = await this.balance(userId);
      assert.equal(before - after, cost);
      assert.equal(await this.ledgerSum(userId), after);
      assert.equal(usage.status, status === "succeeded" ? "succeeded" : "failed");
      assert.equal(Number(usage.cost_micros ?? 0), cost);
      return after;
    },
  };
}

/** The scenarios, run against a gateway on the simulator and one with a fal source behind it. */
function scenarios(name: string, setup: () => Promise<{ gw: TestGateway; fake: FalFake | null }>, teardown: () => Promise<void>) {
  describe(name, () => {
    let gw: TestGateway;
    let fake: FalFake | null;
    let user: { user_id: string; org_id: string; api_key: string };
    let fal: FalClient;
    const m = money(() => gw);

    before(async () => {
      ({ gw, fake } = await setup());
      user = await gw.register();
      // Tier 1 (video) starts at deposits of 10 USD.
      await gw.deposit(user.user_id, 20);
      // The client polls every 500 ms by default; tier 1 allows 60 requests a minute (see the README).
      const limits = await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000 } });
      assert.equal(limits.status, 200, JSON.stringify(limits.json));
      fal = falFor(gw, user.api_key);
    });
    after(teardown);

    test("subscribe to an image endpoint: fal's output JSON with the gateway's PNG, the job in the job list, exact money", async () => {
      const before = await m.balance(user.org_id);
      let enqueued = "";
      const updates: string[] = [];
      const out = await fal.subscribe("fal-ai/flux-2-pro", {
        input: { prompt: "a red kite over dunes", image_size: "landscape_16_9", seed: 7 },
        pollInterval: 50,
        onEnqueue: (id) => (enqueued = id),
        onQueueUpdate: (s) => updates.push(s.status),
      });
      assert.equal(out.requestId, enqueued, "x-fal-request-id is the request id");
      assert.match(out.requestId, /^job_/);
      assert.equal(updates.at(-1), "COMPLETED");
      const data = out.data as Images;
      assert.equal(data.images.length, 1);
      const image = data.images[0];
      assert.ok(image.url.startsWith(`${gw.url}/v1/files/`), image.url);
      assert.equal(image.content_type, "image/png");
      const file = await fetch(image.url);
      assert.equal(file.status, 200);
      const size = pngDimensions(new Uint8Array(await file.arrayBuffer()));
      assert.deepEqual(size, { width: image.width, height: image.height });
      const job = await m.job(out.requestId);
      assert.equal(job.model, "imgB-2-pro");
      assert.equal(job.status, "succeeded");
      await m.charged(user.org_id, before, out.requestId, "succeeded");
      const list = await gw.request("GET", "/v1/jobs?limit=5", { token: user.api_key });
      assert.ok(list.json.data.some((j: { id: string }) => j.id === out.requestId), "in GET /v1/jobs");
      if (fake) {
        const sent = fake.submits().find((r) => r.path === "/fal-ai/flux-2-pro" && (r.body as { prompt?: string }).prompt === "a red kite over dunes");
        assert.ok(sent, "the fal source got the same endpoint");
        assert.deepEqual((sent.body as { image_size: unknown }).image_size, { width: 1344, height: 768 });
        assert.equal((sent.body as { seed: number }).seed, 7, "other fields forwarded");
      }
    });

    test("subscribe to a video endpoint: a 4 s MP4 on the gateway, exact money by the second", async () => {
      const before = await m.balance(user.org_id);
      const out = await fal.subscribe("fal-ai/veo3.1/fast", { input: { prompt: "waves at dusk", duration: "4s", aspect_ratio: "16:9" }, pollInterval: 50 });
      const data = out.data as Video;
      assert.ok(data.video.url.startsWith(`${gw.url}/v1/files/`));
      assert.match(data.video.content_type, /^video\/mp4/);
      const bytes = new Uint8Array(await (await fetch(data.video.url)).arrayBuffer());
      assert.equal(data.video.file_size, bytes.length);
      const job = await m.job(out.requestId);
      assert.equal(job.model, "vidD-3-fast");
      assert.equal(Number(job.duration_sec), 4);
      const after = await m.charged(user.org_id, before, out.requestId, "succeeded");
      // vidD-3-fast is billed per second: 4 of them.
      assert.equal((before - after) % 4, 0);
      if (fake) {
        const sent = fake.submits().find((r) => r.path === "/fal-ai/veo3.1/fast");
        assert.equal((sent?.body as { duration: string }).duration, "4s");
        assert.equal((sent?.body as { generate_audio: boolean }).generate_audio, false, "the gateway's model is silent");
      }
    });

    test("queue.submit, status and result; run; the image-to-video variant and the rows sharing an endpoint", async () => {
      const before = await m.balance(user.org_id);
      const endpoint = "fal-ai/flux-pro/v1.1-ultra";
      const submitted = await fal.queue.submit(endpoint, { input: { prompt: "a lake at dawn", num_images: 2, aspect_ratio: "16:9" } });
      assert.equal(submitted.status, "IN_QUEUE");
      assert.match(submitted.request_id, /^job_/);
      assert.equal(submitted.status_url, `https://queue.fal.run/fal-ai/flux-pro/requests/${submitted.request_id}/status`);
      assert.equal(typeof submitted.queue_position, "number");
      let status = await fal.queue.status(endpoint, { requestId: submitted.request_id });
      for (let i = 0; status.status !== "COMPLETED" && i < 400; i++) {
        assert.ok(status.status === "IN_QUEUE" || status.status === "IN_PROGRESS");
        await new Promise((r) => setTimeout(r, 25));
        status = await fal.queue.status(endpoint, { requestId: submitted.request_id, logs: true });
      }
      assert.equal(status.status, "COMPLETED");
      assert.equal(status.request_id, submitted.request_id);
      const result = await fal.queue.result(endpoint, { requestId: submitted.request_id });
      assert.equal((result.data as Images).images.length, 2);
      assert.equal((await m.job(submitted.request_id)).model, "imgB-1.1-ultra");
      let balance = await m.charged(user.org_id, before, submitted.request_id, "succeeded");

      // fal.run: submit and wait, the output JSON at once.
      const run = await fal.run("fal-ai/recraft/v4/text-to-image", { input: { prompt: "a fox", image_size: "square_hd" } });
      assert.equal((run.data as Images).images.length, 1);
      assert.equal((await m.job(run.requestId)).model, "imgA-v4");
      balance = await m.charged(user.org_id, balance, run.requestId, "succeeded");

      // Kling v3 serves two catalog models: generate_audio tells them apart (fal's default: with audio).
      const kling = await fal.queue.submit("fal-ai/kling-video/v3/pro/text-to-video", { input: { prompt: "a cat", duration: "5" } });
      assert.equal((await m.job(kling.request_id)).model, "vidA-3-pro-audio");
      const silent = await fal.queue.submit("fal-ai/kling-video/v3/pro/image-to-video", {
        input: { prompt: "a cat", duration: "5", generate_audio: false, start_image_url: "https://example.com/cat.png" },
      });
      const silentJob = await m.job(silent.request_id);
      assert.equal(silentJob.model, "vidA-3-pro");
      assert.match(silentJob.request_json, /"imageUrl":"https:\/\/example.com\/cat.png"/);
      for (const id of [kling.request_id, silent.request_id]) await gw.waitForJob(user.api_key, id, 30_000);
      for (const id of [kling.request_id, silent.request_id]) {
        const job = await m.job(id);
        assert.equal(job.status, "succeeded", JSON.stringify(job.error_message));
        balance -= Number(job.cost_micros ?? 0);
      }
      if (fake) {
        const sent = fake.submits().find((r) => r.path === "/fal-ai/kling-video/v3/pro/image-to-video");
        assert.equal((sent?.body as { start_image_url: string }).start_image_url, "https://example.com/cat.png");
        assert.equal((sent?.body as { generate_audio: boolean }).generate_audio, false);
      }
      assert.equal(await m.balance(user.org_id), balance);
      assert.equal(await m.ledgerSum(user.org_id), balance);
    });

    test("queue.cancel: the hold released, the job canceled; status COMPLETED with the error; result 422; a second cancel 400", async () => {
      const before = await m.balance(user.org_id);
      const endpoint = "fal-ai/recraft/v4/text-to-image";
      // A job that never ends by itself: the simulator hangs, the fake stays in progress.
      const submitted = await fal.queue.submit(endpoint, {
        input: { prompt: fake ? "a slow fox [fake:stuck]" : "a slow fox" },
        headers: { "x-svc-simulate": "hang" },
      });
      const held = await m.balance(user.org_id);
      assert.ok(held < before, "a hold");
      await fal.queue.cancel(endpoint, { requestId: submitted.request_id });
      const job = await m.job(submitted.request_id);
      assert.equal(job.status, "failed");
      assert.equal(job.error_code, "canceled");
      await m.charged(user.org_id, before, submitted.request_id, "failed");
      const status = await fal.queue.status(endpoint, { requestId: submitted.request_id });
      assert.equal(status.status, "COMPLETED");
      assert.equal((status as unknown as { error_type: string }).error_type, "canceled");
      const err = await failure(fal.queue.result(endpoint, { requestId: submitted.request_id }));
      assert.ok(err instanceof ValidationError);
      assert.equal(err.status, 422);
      assert.equal((err.body as { error_type?: string }).error_type, "canceled");
      const again = await failure(fal.queue.cancel(endpoint, { requestId: submitted.request_id }));
      assert.equal(again.status, 400);
      if (fake) assert.ok(fake.requests.some((r) => r.method === "PUT" && r.path.endsWith("/cancel")), "the upstream request was withdrawn");
      assert.equal(await m.balance(user.org_id), before);
    });

    test("a failed job: status COMPLETED with the error, result 422 {detail, error_type}, nothing charged", async () => {
      const before = await m.balance(user.org_id);
      const endpoint = "fal-ai/recraft/v4/text-to-image";
      let requestId = "";
      const err = await failure(
        fal.subscribe(endpoint, {
          input: { prompt: fake ? "a fox [fake:moderation]" : "a fox" },
          headers: { "x-svc-simulate": "fail" },
          pollInterval: 50,
          onEnqueue: (id) => (requestId = id),
        }),
      );
      assert.equal(err.status, 422);
      const job = await m.job(err.requestId === "" ? requestId : err.requestId);
      assert.equal(job.status, "failed");
      assert.equal(err.body.error_type, job.error_code);
      assert.equal(err.body.detail, job.error_message);
      assert.equal(job.error_code, fake ? "content_rejected" : "provider_error");
      await m.charged(user.org_id, before, job.id, "failed");
    });

    test("fal_webhook becomes the job's webhook_url; a balance too low is 402 in fal's shape", async () => {
      const submitted = await fal.queue.submit("fal-ai/recraft/v4/text-to-image", { input: { prompt: "a hook" }, webhookUrl: "https://hooks.example.com/fal" });
      assert.equal((await m.job(submitted.request_id)).webhook_url, "https://hooks.example.com/fal");
      await gw.waitForJob(user.api_key, submitted.request_id, 30_000);
      // A new account's starting credit does not cover 8 s of Veo 3.1 (tier 1 set by the operator, for video).
      const poor = await gw.register();
      assert.equal((await gw.request("PUT", `/v1/admin/users/${poor.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 1 } })).status, 200);
      const start = await m.balance(poor.org_id);
      const err = await failure(falFor(gw, poor.api_key).queue.submit("fal-ai/veo3.1", { input: { prompt: "x", duration: "8s" } }));
      assert.equal(err.status, 402);
      assert.equal(err.body.error_type, "insufficient_balance");
      assert.equal(await m.balance(poor.org_id), start);
      assert.equal(await m.ledgerSum(poor.org_id), start);
    });

    test("an unknown endpoint: fal's 404, nothing held; an unknown request id: 404", async () => {
      const before = await m.balance(user.org_id);
      const sent = fake?.submits().length ?? 0;
      const err = await failure(fal.subscribe("fal-ai/no-such-model/v9", { input: { prompt: "x" } }));
      assert.equal(err.status, 404);
      assert.equal(err.body.detail, "Application 'fal-ai/no-such-model/v9' not found");
      const unknown = await failure(fal.queue.status("fal-ai/flux-pro", { requestId: "job_doesnotexist" }));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error_type, "job_not_found");
      assert.equal(await m.balance(user.org_id), before);
      assert.equal(await m.ledgerSum(user.org_id), before);
      assert.equal(fake?.submits().length ?? 0, sent);
    });

    test("an input fal would refuse: 422 in fal's shape (ValidationError), nothing held", async () => {
      const before = await m.balance(user.org_id);
      const err = await failure(fal.queue.submit(ANY_ENDPOINT("fal-ai/veo3.1/fast"), { input: { prompt: "waves", duration: "5s" } }));
      assert.ok(err instanceof ValidationError);
      assert.deepEqual(err.fieldErrors[0].loc, ["body", "duration"]);
      assert.equal(err.fieldErrors[0].type, "literal_error");
      const paid = await failure(fal.queue.submit("fal-ai/veo3.1/fast", { input: { prompt: "waves", generate_audio: true } }));
      assert.equal(paid.status, 422, "the gateway's vidD-3-fast is silent: asking for audio is refused, not sold cheaper");
      const missing = await failure(fal.queue.submit(ANY_ENDPOINT("fal-ai/veo3.1/fast/image-to-video"), { input: { prompt: "waves" } }));
      assert.ok(missing instanceof ValidationError);
      assert.deepEqual(missing.fieldErrors[0].loc, ["body", "image_url"]);
      const native = await failure(fal.queue.submit("fal-ai/flux-2-pro", { input: { prompt: "   " } }));
      assert.equal(native.status, 400);
      assert.equal(native.body.error_type, "invalid_prompt");
      assert.equal(await m.balance(user.org_id), before);
    });

    test("a refused target: 400 invalid_request, nothing sent anywhere, nothing held", async () => {
      const before = await m.balance(user.org_id);
      const submits = fake?.submits().length ?? 0;
      // An address the proxy does not serve (fal's REST API), as the client builds it for a full URL.
      const err = await failure(fal.queue.submit("https://rest.fal.ai/admin/keys", { input: { prompt: "x" } }));
      assert.equal(err.status, 400);
      assert.equal(err.body.error_type, "invalid_request");
      // The status stream is not served either.
      const stream = await fetch(`${gw.url}/fal/proxy`, {
        headers: { authorization: `Key ${user.api_key}`, "x-fal-target-url": "https://queue.fal.run/fal-ai/flux-pro/requests/x/status/stream" },
      });
      assert.equal(stream.status, 400);
      for (const [method, target] of [
        ["POST", undefined],
        ["POST", "https://evil.example/fal-ai/flux-2-pro"],
        ["POST", "http://queue.fal.run/fal-ai/flux-2-pro"],
        ["GET", "https://queue.fal.run/fal-ai/flux-2-pro"],
        ["PUT", "https://queue.fal.run/fal-ai/flux-pro/requests/job_x/status"],
      ] as const) {
        const r = await gw.request(method, "/fal/proxy", {
          headers: { authorization: `Key ${user.api_key}`, ...(target ? { "x-fal-target-url": target } : {}) },
          ...(method === "POST" ? { body: { prompt: "x" } } : {}),
        });
        assert.equal(r.status, 400, `${method} ${target}`);
        assert.equal(r.json.error_type, "invalid_request");
      }
      // The key in `Authorization: Bearer` works too; a wrong key is a 401 in fal's shape.
      const bad = await failure(falFor(gw, "gw_not_a_key").queue.submit("fal-ai/flux-2-pro", { input: { prompt: "x" } }));
      assert.equal(bad.status, 401);
      assert.equal(bad.body.error_type, "auth_error");
      assert.equal(fake?.submits().length ?? 0, submits, "nothing reached the fal source");
      assert.equal(await m.balance(user.org_id), before);
    });

    test("raw protocol answers match the OpenAPI document; Idempotency-Key replays the same job", async () => {
      const headers = { authorization: `Bearer ${user.api_key}`, "x-fal-target-url": "https://queue.fal.run/fal-ai/recraft/v4/text-to-image", "idempotency-key": "fal-idem-1" };
      const a = await gw.request("POST", "/fal/proxy", { headers, body: { prompt: "a heron" } });
      assert.equal(a.status, 200);
      const b = await gw.request("POST", "/fal/proxy", { headers, body: { prompt: "a heron" } });
      assert.equal(b.json.request_id, a.json.request_id);
      const c = await gw.request("POST", "/fal/proxy", { headers, body: { prompt: "another heron" } });
      assert.equal(c.status, 409);
      await gw.waitForJob(user.api_key, a.json.request_id, 30_000);
      const follow = (target: string) => ({ headers: { authorization: `Key ${user.api_key}`, "x-fal-target-url": target } });
      const s = await gw.request("GET", "/fal/proxy", follow(a.json.status_url));
      assert.equal(s.status, 200);
      assert.equal(s.json.status, "COMPLETED");
      const r = await gw.request("GET", "/fal/proxy", follow(a.json.response_url));
      assert.equal(r.status, 200);
      assert.equal(r.headers.get("x-fal-request-id"), a.json.request_id);
      // Another app's prefix does not find it.
      const other = await gw.request("GET", "/fal/proxy", follow(`https://queue.fal.run/fal-ai/veo3.1/requests/${a.json.request_id}`));
      assert.equal(other.status, 404);
    });
  });
}

let simGw: TestGateway | undefined;
scenarios(
  "@fal-ai/client through the gateway's fal proxy (simulator)",
  async () => {
    simGw = await startGateway("sqlite", {}, { overrides: { resolveHost: PUBLIC_HOST } });
    return { gw: simGw, fake: null };
  },
  async () => {
    await simGw?.close();
  },
);

let falGw: TestGateway | undefined;
let falFake: FalFake | undefined;
scenarios(
  "@fal-ai/client through the gateway's fal proxy, a fal source behind it (loopback fake), PostgreSQL",
  async () => {
    falFake = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40 });
    // On PostgreSQL when it answers (the simulator half runs on SQLite): both databases serve the dialect.
    falGw = await startGateway(
      BACKENDS[1]?.skip ? "sqlite" : "postgres",
      {
        FAL_TEST_KEY: FAL_KEY,
        UPSTREAMS: JSON.stringify([{ name: "fal-local", protocol: "fal", base_url: falFake.url, api_key: "env:FAL_TEST_KEY", families: ["imgA", "imgB", "vidA", "vidD"], max_concurrency: 4 }]),
      },
      { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } }, overrides: { resolveHost: PUBLIC_HOST } },
    );
    return { gw: falGw, fake: falFake };
  },
  async () => {
    await falGw?.close();
    await falFake?.close();
  },
);
