/**
 * D35 end to end: a real gateway on loopback whose `UPSTREAMS` puts first, for imgC, transcription and text,
 * an `openai` source that answers every call as OpenAI answers for a model it does not have (404
 * `{"error": {"code": "model_not_found", ...}}`, a tiny server written here). The family's next source
 * serves the call under the same hold (fallback layer 1, one hold, one charge); that source's circuit stays
 * closed and `GET /v1/admin/upstreams` shows its `last_error`; a warning log line names the source and the
 * upstream id. When no source is left, the answer is 502 `provider_error` (a job: `failed`) naming the
 * catalog model and the upstream id, and nothing is charged: balance and ledger sum unchanged. No key
 * appears in any answer or log line. It relies on the OpenAI adapters reading that 404 as `modelNotFound`
 * (src/upstreams/openai-compatible/api.ts).
 */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../../fakes/openai-chat.ts";
import { type OpenAIAudioFake, startOpenAIAudioFake } from "../../fakes/openai-audio.ts";
import { type OpenAIImagesFake, startOpenAIImagesFake } from "../../fakes/openai-images.ts";
import { makeWav } from "../helpers/audio-fixtures.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const KEY = "sk-d35-e2e-key-9c4b1a7e2f30";

/** A server answering every call as OpenAI does for a model it does not have; it records the models asked for. */
interface GoneServer {
  url: string;
  /** `path model` of each call. */
  calls: string[];
  close(): Promise<void>;
}

async function startGoneServer(): Promise<GoneServer> {
  const calls: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      let model = /name="model"\r\n\r\n([^\r]+)/.exec(text)?.[1] ?? "";
      try {
        model = String((JSON.parse(text) as { model?: unknown }).model ?? model);
      } catch {
        // a multipart form: read above
      }
      calls.push(`${req.url ?? ""} ${model}`);
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: { message: `The model \`${model}\` does not exist or you do not have access to it.`, type: "invalid_request_error", param: null, code: "model_not_found" },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A warning of the process logger (services.log), as the registry writes it. */
interface Warning {
  fields: { source?: string; upstream_model?: string | null };
  message: string;
}

/** A gateway on `upstreams` with its request log lines and its process logger's warnings captured. */
async function gatewayOn(upstreams: unknown[]): Promise<{ gw: TestGateway; logLines: string[]; warnings: Warning[] }> {
  const logLines: string[] = [];
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  const gw = await startGateway(
    "sqlite",
    { D35_KEY: KEY, UPSTREAMS: JSON.stringify(upstreams), LOG_LEVEL: "info" },
    { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } }, logStream },
  );
  // The registry writes to the process logger (not the request log): record its warnings as they go by.
  const warnings: Warning[] = [];
  const log = gw.services.log as unknown as { warn: (fields: unknown, message?: string) => void };
  const warn = log.warn.bind(log);
  log.warn = (fields, message) => {
    warnings.push({ fields: fields as Warning["fields"], message: message ?? "" });
    warn(fields, message);
  };
  return { gw, logLines, warnings };
}

/** An account with `usd` of balance (over the signup credit) and generous limits. */
async function account(gw: TestGateway, usd: number) {
  const u = await gw.register();
  if (usd > 0) await gw.deposit(u.user_id, usd);
  await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000, per_model_rpm: 100_000 } });
  return u;
}

/** Balance and ledger sum of `userId`, micro-USD (they must agree). */
async function money(gw: TestGateway, userId: string): Promise<number> {
  const db = gw.services.db.kysely;
  const balance = await getBalance(db, userId);
  assert.equal(balance, await ledgerSum(db, userId));
  return balance ?? -1;
}

/** POSTs a WAV of `seconds` to the transcription route. */
async function transcribe(gw: TestGateway, apiKey: string, seconds: number): Promise<Response> {
  const form = new FormData();
  form.set("file", new Blob([Buffer.from(makeWav(seconds))]), "talk.wav");
  return fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: form });
}

const CHAT = { model: "txtA-large", messages: [{ role: "user", content: "hi" }], max_tokens: 16 };

describe("D35: the first source has no such model, the next one serves", () => {
  let gone: GoneServer;
  let images: OpenAIImagesFake;
  let audio: OpenAIAudioFake;
  let chat: FakeOpenAI;
  let gw: TestGateway;
  let logLines: string[];
  let warnings: Warning[];

  before(async () => {
    gone = await startGoneServer();
    images = await startOpenAIImagesFake({ apiKey: KEY });
    audio = await startOpenAIAudioFake({ apiKey: KEY, latencyMs: 0 });
    chat = await startFakeOpenAI();
    ({ gw, logLines, warnings } = await gatewayOn([
      { name: "oa-gone", protocol: "openai", base_url: `${gone.url}/v1`, api_key: "env:D35_KEY", families: ["imgC", "transcribe", "txtA"] },
      { name: "oa-images", protocol: "openai", base_url: `${images.url}/v1`, api_key: "env:D35_KEY", families: ["imgC"] },
      { name: "oa-audio", protocol: "openai", base_url: `${audio.url}/v1`, api_key: "env:D35_KEY", families: ["transcribe"] },
      { name: "oa-chat", protocol: "openai", base_url: chat.baseUrl, api_key: "env:D35_KEY", families: ["txtA"] },
    ]));
  });
  after(async () => {
    await gw?.close();
    await Promise.all([gone?.close(), images?.close(), audio?.close(), chat?.close()]);
  });

  test("an imgC job: served by the next source at fallback layer 1, one hold and one charge", async () => {
    const u = await account(gw, 5);
    const before = await money(gw, u.org_id);
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgC-v3", prompt: "a teapot" } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.fallback_layer, 1);
    const row = await gw.services.db.kysely.selectFrom("jobs").select(["upstream_source", "cost_micros"]).where("id", "=", r.json.id).executeTakeFirstOrThrow();
    assert.equal(row.upstream_source, "oa-images");
    const kinds = await gw.services.db.kysely.selectFrom("ledger_entries").select("kind").where("job_id", "=", r.json.id).orderBy("seq").execute();
    assert.deepEqual(kinds.map((k) => k.kind), ["hold", "hold_release", "charge"]);
    assert.equal(await money(gw, u.org_id), before - Number(row.cost_micros));
    assert.equal(gone.calls.filter((c) => c.startsWith("/v1/images/generations ")).length, 1);
    assert.equal(images.submits().length, 1);
  });

  test("a transcription: the next source answers, X-Svc-Fallback-Layer 1, charged once", async () => {
    const u = await account(gw, 5);
    const before = await money(gw, u.org_id);
    const res = await transcribe(gw, u.api_key, 70);
    const body = (await res.json()) as { text: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(res.headers.get("x-svc-fallback"), "true");
    assert.equal(res.headers.get("x-svc-fallback-layer"), "1");
    assert.equal(res.headers.get("x-svc-cost-usd"), "0.0018");
    assert.equal(await money(gw, u.org_id), before - 1800);
    assert.equal(gone.calls.filter((c) => c.startsWith("/v1/audio/transcriptions ")).length, 1);
  });

  test("a chat completion: the next source of the model answers (layer 1)", async () => {
    const u = await account(gw, 5);
    const res = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: CHAT });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.headers.get("x-svc-fallback-layer"), "1");
    assert.equal(res.json.model, "txtA-large");
    assert.equal(gone.calls.filter((c) => c.startsWith("/v1/chat/completions ")).length, 1);
    assert.equal(chat.requests.length, 1);
  });

  test("the source stays healthy: circuit closed, last_error model_not_found; a warning names it and the upstream id; no key anywhere", async () => {
    const res = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
    const goneRow = (res.json.data as { name: string; circuit: string; failures: number; last_error: { code: string; message: string; at: string } | null }[]).find((r) => r.name === "oa-gone")!;
    assert.equal(goneRow.circuit, "closed");
    assert.ok(goneRow.failures >= 2, `failures ${goneRow.failures}`);
    assert.equal(goneRow.last_error?.code, "model_not_found");
    assert.ok(!Number.isNaN(Date.parse(goneRow.last_error?.at ?? "")));
    const imageModel = gone.calls.find((c) => c.startsWith("/v1/images/generations "))!.split(" ")[1]!;
    assert.ok(imageModel.length > 0);
    const warning = warnings.find((w) => w.fields.source === "oa-gone" && w.fields.upstream_model === imageModel);
    assert.ok(warning, `a warning naming oa-gone and ${imageModel}: ${JSON.stringify(warnings)}`);
    assert.ok(warning.message.includes("oa-gone") && warning.message.includes(imageModel), warning.message);
    assert.ok(!(JSON.stringify(res.json) + logLines.join("") + JSON.stringify(warnings)).includes(KEY), "a key leaked");
  });
});

describe("D35: no source left with the model", () => {
  let goneA: GoneServer;
  let goneB: GoneServer;
  let gw: TestGateway;
  let logLines: string[];

  before(async () => {
    goneA = await startGoneServer();
    goneB = await startGoneServer();
    // Text: the model's equivalents (fallback layers 2 and 3) are on the same sources, so none is left there either.
    const families = ["imgC", "transcribe", "txtA", "txtB", "txtD"];
    ({ gw, logLines } = await gatewayOn([
      { name: "gone-a", protocol: "openai", base_url: `${goneA.url}/v1`, api_key: "env:D35_KEY", families },
      { name: "gone-b", protocol: "openai", base_url: `${goneB.url}/v1`, api_key: "env:D35_KEY", families },
    ]));
  });
  after(async () => {
    await gw?.close();
    await Promise.all([goneA?.close(), goneB?.close()]);
  });

  /** The model the last gone server was asked for on `path`. */
  const askedFor = (path: string) => goneB.calls.filter((c) => c.startsWith(`${path} `)).at(-1)!.split(" ")[1]!;
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  test("an imgC job ends failed provider_error naming the model and the upstream id; nothing charged", async () => {
    const u = await account(gw, 5);
    const before = await money(gw, u.org_id);
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgC-v3", prompt: "a teapot" } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "failed", JSON.stringify(done.json));
    assert.equal(done.json.error.code, "provider_error");
    const upstream = askedFor("/v1/images/generations");
    assert.match(done.json.error.message, new RegExp(`^No upstream source serves imgC-v3: the source answered that its upstream model ${escape(upstream)} does not exist\\.`));
    assert.equal(goneA.calls.length, 1, "each source asked once");
    assert.equal(await money(gw, u.org_id), before);
    const kinds = await gw.services.db.kysely.selectFrom("ledger_entries").select("kind").where("job_id", "=", r.json.id).orderBy("seq").execute();
    assert.deepEqual(kinds.map((k) => k.kind), ["hold", "hold_release"]);
  });

  test("a transcription answers 502 provider_error naming the model and the upstream id; nothing charged", async () => {
    const u = await account(gw, 5);
    const before = await money(gw, u.org_id);
    const res = await transcribe(gw, u.api_key, 30);
    const body = (await res.json()) as { error: { code: string; message: string; type: string } };
    assert.equal(res.status, 502, JSON.stringify(body));
    assert.equal(body.error.code, "provider_error");
    assert.equal(body.error.type, "provider_error");
    assert.equal(
      body.error.message,
      `No upstream source serves host1-transcribe-1: the source answered that its upstream model ${askedFor("/v1/audio/transcriptions")} does not exist. Nothing was charged.`,
    );
    assert.equal(await money(gw, u.org_id), before);
  });

  test("a chat completion answers 502 provider_error naming the model; nothing charged", async () => {
    const u = await account(gw, 5);
    const before = await money(gw, u.org_id);
    const res = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: CHAT });
    assert.equal(res.status, 502, JSON.stringify(res.json));
    assert.equal(res.json.error.code, "provider_error");
    assert.match(res.json.error.message, /^No upstream source serves txtA-large: the source answered that its upstream model \S+ does not exist\. Nothing was charged\.$/);
    assert.equal(await money(gw, u.org_id), before);
  });

  test("no key in any answer or log line; both sources keep their circuits closed", async () => {
    const res = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
    for (const row of res.json.data as { circuit: string; last_error: { code: string } | null }[]) {
      assert.equal(row.circuit, "closed");
      assert.equal(row.last_error?.code, "model_not_found");
    }
    assert.ok(!(JSON.stringify(res.json) + logLines.join("")).includes(KEY), "a key leaked");
  });
});
