/**
 * The MCP server (D39) proven with the official MCP SDK's own client (`Client` over
 * `StreamableHTTPClientTransport`), unchanged, against a real gateway on loopback (simulator): the 401
 * before any JSON-RPC, the tool list and its schemas (the native route schemas), every tool once with exact
 * money afterwards (balance, ledger sum, usage record), refusals (balance too low, a bad argument, a key's
 * model allow-list) as `isError` results that charge nothing, a test-mode key that moves no money, a video
 * job submitted, followed and cancelled, the webhooks of a job submitted through MCP, protocol errors as
 * JSON-RPC errors, and `GET /llms.txt` in step with the catalog. On both databases.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { enabledModels, getModel } from "../../src/catalog/models.ts";
import { quoteMusic, quoteSfx, quoteSpeech } from "../../src/catalog/quote.ts";
import type { MusicModel, SfxModel, SpeechModel } from "../../src/catalog/types.ts";
import { TEXT_MODELS } from "../../src/catalog/text-models.ts";
import { priceOf, publishedSchema, TOOL_NAMES, TOOLS } from "../../src/http/dialects/mcp/tools.ts";
import { usdToMicros } from "../../src/money.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Receiver, startReceiver, verify } from "../webhooks/receiver.ts";

/** A tool result's structured content, as the tests read it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
type Structured = Record<string, any>;

const INIT = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
const MCP_HEADERS = { accept: "application/json, text/event-stream" };

for (const backend of BACKENDS) {
  describe(`the MCP server through the official MCP SDK client (D39) on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    let rx: Receiver;
    let user: { user_id: string; org_id: string; api_key: string };
    let mcp: Client;
    const clients: Client[] = [];

    const micros = (usd: unknown): number => {
      const m = usdToMicros(String(usd));
      assert.ok(m !== null, `a USD amount: ${String(usd)}`);
      return m;
    };
    /** A connected SDK client with `key`, sending `headers` on every request. */
    async function connect(key: string, headers: Record<string, string> = {}): Promise<Client> {
      const client = new Client({ name: "gateway-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } } }));
      clients.push(client);
      return client;
    }
    async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ result: CallToolResult; s: Structured }> {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      return { result, s: (result.structuredContent ?? {}) as Structured };
    }
    async function balanceOf(token: string): Promise<number> {
      return micros((await gw.request("GET", "/v1/auth/me", { token })).json.balance_usd);
    }
    async function ledgerSum(accountId: string): Promise<number> {
      const row = await gw.services.db.kysely
        .selectFrom("ledger_entries")
        .select((eb) => eb.fn.sum<number | string>("amount_micros").as("s"))
        .where("account_id", "=", accountId)
        .executeTakeFirst();
      return Number(row?.s ?? 0);
    }
    async function ledgerCount(accountId: string): Promise<number> {
      return (await gw.services.db.kysely.selectFrom("ledger_entries").select("id").where("account_id", "=", accountId).execute()).length;
    }
    async function usageOf(requestId: string) {
      return gw.services.db.kysely.selectFrom("usage_records").selectAll().where("id", "=", requestId).executeTakeFirstOrThrow();
    }
    async function usageCount(accountId: string): Promise<number> {
      return (await gw.services.db.kysely.selectFrom("usage_records").select("id").where("account_id", "=", accountId).execute()).length;
    }
    /** After a paid call: the balance moved by exactly `cost`, the ledger sums to the balance, the result states both. */
    async function assertCharged(s: Structured, before: number, cost: number): Promise<void> {
      const after = await balanceOf(user.api_key);
      assert.equal(micros(s.cost_usd), cost, "cost_usd");
      assert.equal(before - after, cost, "the balance moved by the cost");
      assert.equal(micros(s.balance_usd), after, "balance_usd is the balance after the call");
      assert.equal(await ledgerSum(user.org_id), after, "the ledger sums to the balance");
    }
    /** The one content item of `type`. */
    function item<T extends CallToolResult["content"][number]["type"]>(result: CallToolResult, type: T): Extract<CallToolResult["content"][number], { type: T }> {
      const found = result.content.filter((c) => c.type === type);
      assert.equal(found.length, 1, `one ${type} item: ${JSON.stringify(result.content.map((c) => c.type))}`);
      return found[0] as Extract<CallToolResult["content"][number], { type: T }>;
    }
    /** A stored file's bytes, fetched from its public URL. */
    async function fetchBytes(url: string): Promise<Buffer> {
      const r = await fetch(url);
      assert.equal(r.status, 200, url);
      return Buffer.from(await r.arrayBuffer());
    }

    before(async () => {
      rx = await startReceiver();
      // Webhooks to the loopback receiver (D31: private addresses allowed in tests).
      gw = await startGateway(backend.name, { WEBHOOK_ALLOW_PRIVATE: "1" });
      user = await gw.register();
      // Tier 1 (10 USD deposited) makes videos.
      await gw.deposit(user.user_id, 20);
      // The tests make more than tier 1's 60 requests a minute; the limit's own test uses a key's rpm.
      assert.equal((await gw.request("PUT", `/v1/admin/users/${user.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 100_000 } })).status, 200);
      mcp = await connect(user.api_key);
    });
    after(async () => {
      for (const c of clients) await c.close().catch(() => {});
      await gw?.close();
      await rx?.close();
    });

    test("without a valid key: 401 auth_error in the D1 body before any JSON-RPC; the SDK client cannot connect", async () => {
      for (const token of [undefined, "gw_not_a_real_key"]) {
        const r = await gw.request("POST", "/mcp", { body: INIT, headers: MCP_HEADERS, ...(token ? { token } : {}) });
        assert.equal(r.status, 401);
        assert.equal(r.json.error.code, "auth_error");
        assert.equal(r.json.error.type, "authentication_error");
        assert.equal(r.json.jsonrpc, undefined, "not a JSON-RPC answer");
      }
      const client = new Client({ name: "gateway-test", version: "1.0.0" });
      await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: "Bearer gw_wrong" } } })));
    });

    test("tools/list: the tools of D39, prices and durations in their descriptions, input schemas from the native route schemas", async () => {
      const { tools } = await mcp.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        [...TOOL_NAMES],
      );
      for (const t of tools) {
        assert.equal(t.inputSchema.type, "object", t.name);
        assert.ok((t.description ?? "").length > 80, t.name);
        assert.ok(!JSON.stringify(t.inputSchema).includes("x-error-"), `${t.name}: no internal annotations`);
      }
      const byName = new Map(tools.map((t) => [t.name, t]));
      // Prices come from the catalog, and the paid tools say how long they take.
      const speech = getModel("alpha-multilingual-v2");
      assert.ok(speech);
      assert.ok(byName.get("generate_speech")?.description?.includes(`alpha-multilingual-v2 ${priceOf(speech)}`));
      // Voice agents are pointed at the realtime sockets (D42, D43).
      assert.match(byName.get("generate_speech")?.description ?? "", /\/v1\/audio\/speech\/\{voice_id\}\/stream-input/);
      assert.match(byName.get("generate_speech")?.description ?? "", /\/v1\/audio\/transcriptions\/realtime/);
      assert.match(byName.get("list_models")?.description ?? "", /realtime: true/);
      for (const name of ["generate_speech", "generate_music", "generate_sound_effect", "generate_image", "submit_video"]) {
        const d = byName.get(name)?.description ?? "";
        assert.match(d, /USD/, name);
        assert.match(d, /second|minute/, name);
      }
      // One source of truth: the image and video tools take the bodies the OpenAPI document gives their routes.
      const doc = (await gw.request("GET", "/openapi.json")).json;
      const bodyOf = (path: string) => publishedSchema(doc.paths[path].post.requestBody.content["application/json"].schema);
      assert.deepEqual(byName.get("generate_image")?.inputSchema, bodyOf("/v1/images/generations"));
      assert.deepEqual(byName.get("submit_video")?.inputSchema, bodyOf("/v1/videos/generations"));
      // The audio tools take the route's fields less the aliases (`text` for `input`, ...) and `stream`, in MP3.
      const speechProps = Object.keys(byName.get("generate_speech")?.inputSchema.properties ?? {});
      assert.deepEqual(speechProps, Object.keys(bodyOf("/v1/audio/speech").properties as object).filter((k) => !["text", "voice", "stream"].includes(k)));
      const formats = (byName.get("generate_music")?.inputSchema.properties as { response_format: { enum: string[] } }).response_format.enum;
    assert.ok(formats.length > 0 && formats.every((f) => f.startsWith("mp3_")));
    assert.deepEqual(byName.get("get_job")?.inputSchema.required, ["job_id"]);
      assert.deepEqual(
        TOOLS.map((t) => t.name),
        [...TOOL_NAMES],
      );
    });

    test("list_models, get_balance, list_voices: free, with the common fields", async () => {
      const before = await balanceOf(user.api_key);
      const { s: models } = await call(mcp, "list_models", { modality: "image" });
      assert.ok(models.models.length > 0);
      assert.ok(models.models.every((m: { modality: string }) => m.modality === "image"));
      const ids = models.models.map((m: { id: string }) => m.id);
      assert.deepEqual(ids, enabledModels().filter((m) => m.modality === "image").map((m) => m.id).sort());
      assert.equal(models.cost_usd, 0);
      assert.match(models.request_id, /^req_/);
      assert.equal(micros(models.balance_usd), before);
      const speechOnly = (await call(mcp, "list_models", { capability: "speech" })).s.models;
      assert.ok(speechOnly.length > 0 && speechOnly.every((m: { capabilities: string[] }) => m.capabilities.includes("speech")));
      // Speech models say whether the realtime socket serves them (D42), as GET /v1/models does.
      const realtime = Object.fromEntries(speechOnly.map((m: { id: string; realtime?: boolean }) => [m.id, m.realtime]));
      assert.equal(realtime["alpha-flash-v2-5"], true);
      assert.equal(realtime["alpha-v3"], false);
      assert.ok(models.models.every((m: { realtime?: boolean }) => m.realtime === undefined), "no realtime field on image models");

      const { s: bal } = await call(mcp, "get_balance");
      assert.equal(micros(bal.balance_usd), before);
      assert.equal(bal.tier, 1);
      assert.equal(bal.test_mode, false);
      assert.equal(bal.cost_usd, 0);

      const { s: voices } = await call(mcp, "list_voices", { provider: "alpha", limit: 3 });
      assert.equal(voices.voices.length, 3);
      assert.ok(voices.total >= 3);
      assert.ok(voices.voices.every((v: { voice_id: string }) => typeof v.voice_id === "string"));
      const name = String(voices.voices[0].name);
      const { s: found } = await call(mcp, "list_voices", { query: name.toUpperCase() });
      assert.ok(found.voices.some((v: { voice_id: string }) => v.voice_id === voices.voices[0].voice_id), "the query matches case-insensitively");
      assert.equal(await balanceOf(user.api_key), before);
      assert.equal(await ledgerSum(user.org_id), before);
    });

    test("estimate_cost quotes without holding; generate_speech then charges exactly that: audio, the stored file, the usage record", async () => {
      const body = { input: "Hello from an agent.", voice_id: DEMO_ALPHA_VOICE_ID };
      const before = await balanceOf(user.api_key);
      const entries = await ledgerCount(user.org_id);
      const { s: quote } = await call(mcp, "estimate_cost", { endpoint: "/v1/audio/speech", body });
      const model = getModel("alpha-multilingual-v2") as SpeechModel;
      const cost = quoteSpeech(model, body.input.length);
      assert.equal(micros(quote.cost_usd), cost);
      assert.equal(quote.model, "alpha-multilingual-v2");
      assert.equal(quote.affordable, true);
      assert.equal(await ledgerCount(user.org_id), entries, "nothing held");
      assert.equal(await balanceOf(user.api_key), before);

      const { result, s } = await call(mcp, "generate_speech", body);
      assert.equal(result.isError, undefined);
      await assertCharged(s, before, cost);
      assert.equal(s.model, "alpha-multilingual-v2");
      assert.equal(s.characters, body.input.length);
      const audio = item(result, "audio");
      assert.equal(audio.mimeType, "audio/mpeg");
      const bytes = Buffer.from(audio.data, "base64");
      assert.ok(bytes.length > 1000);
      const link = item(result, "resource_link");
      assert.equal(link.uri, s.url);
      assert.deepEqual(await fetchBytes(s.url), bytes, "the stored file is the audio answered");
      const usage = await usageOf(s.request_id);
      assert.equal(usage.kind, "speech");
      assert.equal(usage.status, "succeeded");
      assert.equal(usage.cost_micros, cost);
      assert.equal(usage.characters, body.input.length);
      // The stored output is a job of the gallery, charged once.
      const job = (await gw.request("GET", `/v1/jobs/${s.job_id}`, { token: user.api_key })).json;
      assert.equal(job.kind, "audio");
      assert.equal(job.status, "succeeded");
      assert.equal(micros(job.cost_usd), cost);
    });

    test("generate_music and generate_sound_effect: audio, stored files, exact money", async () => {
      let before = await balanceOf(user.api_key);
      const music = await call(mcp, "generate_music", { prompt: "calm lo-fi piano", music_length_ms: 10_000 });
      assert.equal(music.result.isError, undefined, JSON.stringify(music.result.content));
      const musicCost = quoteMusic(getModel("alpha-music") as MusicModel, 10_000);
      await assertCharged(music.s, before, musicCost);
      assert.equal(item(music.result, "audio").mimeType, "audio/mpeg");
      assert.equal(music.s.duration_sec, 10);
      assert.equal((await usageOf(music.s.request_id)).cost_micros, musicCost);
      assert.equal((await usageOf(music.s.request_id)).kind, "music");

      before = await balanceOf(user.api_key);
      const sfx = await call(mcp, "generate_sound_effect", { prompt: "a door creaking open", duration_seconds: 2 });
      const sfxCost = quoteSfx(getModel("alpha-sfx") as SfxModel);
      await assertCharged(sfx.s, before, sfxCost);
      const audio = Buffer.from(item(sfx.result, "audio").data, "base64");
      assert.deepEqual(await fetchBytes(sfx.s.url), audio);
      const usage = await usageOf(sfx.s.request_id);
      assert.equal(usage.kind, "sfx");
      assert.equal(usage.cost_micros, sfxCost);
    });

    test("generate_image: waits for the job, answers the image itself and its stored URL; exact money", async () => {
      const before = await balanceOf(user.api_key);
      const { s: quote } = await call(mcp, "estimate_cost", { endpoint: "/v1/images/generations", body: { model: "imgA-v4", prompt: "a lighthouse at dusk" } });
      const { result, s } = await call(mcp, "generate_image", { model: "imgA-v4", prompt: "a lighthouse at dusk" });
      assert.equal(result.isError, undefined, JSON.stringify(result.content));
      assert.equal(s.status, "succeeded");
      assert.match(s.job_id, /^job_/);
      await assertCharged(s, before, micros(quote.cost_usd));
      const image = item(result, "image");
      assert.equal(image.mimeType, "image/png");
      const png = Buffer.from(image.data, "base64");
      assert.deepEqual(png.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      assert.deepEqual(await fetchBytes(item(result, "resource_link").uri), png);
      assert.equal(s.job.output.url, item(result, "resource_link").uri);
      // get_job answers the same job, with the image again.
      const again = await call(mcp, "get_job", { job_id: s.job_id });
      assert.equal(again.s.status, "succeeded");
      assert.equal(again.s.cost_usd, s.cost_usd);
      assert.equal(item(again.result, "image").data, image.data);
    });

    test("a video job: submit_video, followed with get_job, cancel_job gives the whole hold back", async () => {
      const hanging = await connect(user.api_key, { "x-svc-simulate": "hang" });
      const before = await balanceOf(user.api_key);
      const model = enabledModels().find((m) => m.capability === "video" && m.id.startsWith("vidD-"));
      assert.ok(model);
      const { s: quote } = await call(mcp, "estimate_cost", { endpoint: "/v1/videos/generations", body: { model: model.id, prompt: "waves at sunset", duration: 4 } });
      const submitted = await call(hanging, "submit_video", { model: model.id, prompt: "waves at sunset", duration: 4 });
      assert.equal(submitted.result.isError, undefined, JSON.stringify(submitted.result.content));
      const jobId: string = submitted.s.job_id;
      assert.match(jobId, /^job_/);
      assert.ok(["pending", "processing"].includes(submitted.s.status));
      const hold = micros(quote.cost_usd);
      assert.equal(micros(submitted.s.cost_usd), hold, "while it runs, cost_usd is what is held");
      assert.equal(await balanceOf(user.api_key), before - hold);
      assert.equal(micros(submitted.s.balance_usd), before - hold);

      // Followed until the (hanging) simulator has it.
      let followed = await call(mcp, "get_job", { job_id: jobId });
      for (let i = 0; i < 100 && followed.s.status === "pending"; i++) {
        await new Promise((r) => setTimeout(r, 50));
        followed = await call(mcp, "get_job", { job_id: jobId });
      }
      assert.equal(followed.s.status, "processing");
      assert.equal(followed.s.job.id, jobId);

      const canceled = await call(mcp, "cancel_job", { job_id: jobId });
      assert.equal(canceled.result.isError, undefined, JSON.stringify(canceled.result.content));
      assert.equal(canceled.s.status, "failed");
      assert.equal(canceled.s.job.error.code, "canceled");
      assert.equal(canceled.s.cost_usd, 0);
      assert.equal(await balanceOf(user.api_key), before, "the whole hold is back");
      assert.equal(micros(canceled.s.balance_usd), before);
      assert.equal(await ledgerSum(user.org_id), before);

      // Canceling again is refused with the native code, and costs nothing.
      const again = await call(mcp, "cancel_job", { job_id: jobId });
      assert.equal(again.result.isError, true);
      assert.equal(again.s.error.code, "job_not_cancelable");
      const unknown = await call(mcp, "get_job", { job_id: "job_doesnotexist" });
      assert.equal(unknown.s.error.code, "job_not_found");
    });

    test("a video job that runs to the end: charged its quote once it succeeded", async () => {
      const before = await balanceOf(user.api_key);
      const model = enabledModels().find((m) => m.capability === "video" && m.id.startsWith("vidD-"));
      assert.ok(model);
      const submitted = await call(mcp, "submit_video", { model: model.id, prompt: "a paper boat", duration: 4 });
      const hold = micros(submitted.s.job.hold_usd);
      await gw.waitForJob(user.api_key, submitted.s.job_id);
      const done = await call(mcp, "get_job", { job_id: submitted.s.job_id });
      assert.equal(done.s.status, "succeeded", JSON.stringify(done.s.job.error));
      await assertCharged(done.s, before, hold);
      assert.equal(item(done.result, "resource_link").uri, done.s.job.output.url);
      assert.equal(done.s.job.output.content_type, "video/mp4");
    });

    test("webhooks: a job submitted through MCP is announced as a native one, to the account's endpoint and its own webhook_url", async () => {
      const ep = await gw.request("POST", "/v1/webhooks", { token: user.api_key, body: { url: `${rx.url}/account`, events: ["job.succeeded"] } });
      assert.equal(ep.status, 201, JSON.stringify(ep.json));
      const { s } = await call(mcp, "generate_image", { model: "imgA-v4", prompt: "a signed lighthouse", webhook_url: `${rx.url}/own` });
      assert.equal(s.status, "succeeded");
      await rx.waitFor(() => rx.on("/account").length >= 1 && rx.on("/own").length >= 1, "the job.succeeded event at both destinations");
      const defaultSecret = (await gw.request("GET", "/v1/webhooks/secret", { token: user.api_key })).json.secret as string;
      const toAccount = verify(ep.json.secret as string, rx.on("/account")[0]);
      const toJob = verify(defaultSecret, rx.on("/own")[0]);
      assert.equal(toAccount.type, "job.succeeded");
      assert.equal(toAccount.id, toJob.id, "one event, two destinations");
      assert.equal((toAccount.data as { id: string }).id, s.job_id);
      assert.equal(await gw.request("DELETE", `/v1/webhooks/${ep.json.id as string}`, { token: user.api_key }).then((r) => r.status), 200);
    });

    test("refusals are isError results with the native code and message, and charge nothing", async () => {
      // A balance too low: the signup credit does not buy 5 minutes of music, nor a costly image.
      const poor = await gw.register();
      const poorMcp = await connect(poor.api_key);
      const before = await balanceOf(poor.api_key);
      const entries = await ledgerCount(poor.org_id);
      const music = await call(poorMcp, "generate_music", { prompt: "an epic", music_length_ms: 300_000 });
      assert.equal(music.result.isError, true);
      assert.equal(music.s.error.code, "billing_error");
      assert.equal(music.s.status, 402);
      assert.equal(music.s.cost_usd, 0);
      assert.equal(micros(music.s.balance_usd), before);
      assert.match((music.result.content[0] as { text: string }).text, /^billing_error: /);
      const quote = await call(poorMcp, "estimate_cost", { endpoint: "/v1/audio/music", body: { prompt: "an epic", music_length_ms: 300_000 } });
      assert.equal(quote.s.affordable, false);
      // Two imgA-v4-pro images cost 0.676 USD, more than the 0.5 USD signup credit.
      const image = await call(poorMcp, "generate_image", { model: "imgA-v4-pro", prompt: "a castle", n: 2 });
      assert.equal(image.result.isError, true);
      assert.equal(image.s.error.code, "insufficient_balance");
      assert.equal(image.s.status, 402);
      const video = await call(poorMcp, "submit_video", { model: "vidD-3-fast", prompt: "a castle", duration: 4 });
      assert.equal(video.result.isError, true);
      assert.equal(video.s.error.code, "rate_limited", "tier 0 makes no video");
      assert.equal(await balanceOf(poor.api_key), before);
      assert.equal(await ledgerCount(poor.org_id), entries);
      assert.equal(await ledgerSum(poor.org_id), before);
      assert.equal(await usageCount(poor.org_id), 0, "no usage record of a charge");

      // Bad arguments: the native codes, from the route schema or the service.
      const mine = await balanceOf(user.api_key);
      const cases: [string, Record<string, unknown>, string][] = [
        ["generate_speech", { input: "hi", voice_id: DEMO_ALPHA_VOICE_ID, model: "nope" }, "not_a_tts_model"],
        ["generate_speech", { input: "hi" }, "voice_required"],
        ["generate_speech", { input: "hi", voice_id: DEMO_ALPHA_VOICE_ID, voice_settings: { stability: 2 } }, "invalid_request"],
        ["generate_image", { model: "imgA-v4", prompt: "" }, "invalid_prompt"],
      ["generate_sound_effect", { prompt: "a bell", response_format: "pcm_16000" }, "invalid_request"],
        ["submit_video", { model: "vidD-3-fast", prompt: "x", duration: 99 }, "invalid_duration"],
        ["estimate_cost", { endpoint: "/v1/audio/speech", body: { input: "hi", voice_id: "v", model: "nope" } }, "not_a_tts_model"],
        ["estimate_cost", { endpoint: "/v1/nope", body: {} }, "invalid_request"],
        ["get_job", {}, "invalid_request"],
      ];
      for (const [name, args, code] of cases) {
        const r = await call(mcp, name, args);
        assert.equal(r.result.isError, true, `${name} ${JSON.stringify(args)}`);
        assert.equal(r.s.error.code, code, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.s.error)}`);
        assert.equal(r.s.cost_usd, 0);
      }
      assert.equal(await balanceOf(user.api_key), mine);
      assert.equal(await ledgerSum(user.org_id), mine);
    });

    test("a failure after the hold gives everything back: an upstream failure, a storage failure, a failed image job", async () => {
      const failing = await connect(user.api_key, { "x-svc-simulate": "fail" });
      const before = await balanceOf(user.api_key);
      const sfx = await call(failing, "generate_sound_effect", { prompt: "a bell" });
      assert.equal(sfx.result.isError, true);
      assert.equal(sfx.s.error.code, "provider_error");
      assert.equal(sfx.s.cost_usd, 0);
      assert.equal((await usageOf(sfx.s.request_id)).status, "failed");
      assert.equal(await balanceOf(user.api_key), before);

      const image = await call(failing, "generate_image", { model: "imgA-v4", prompt: "a bell" });
      assert.equal(image.result.isError, true, JSON.stringify(image.s));
      assert.ok(["failed", "refunded"].includes(image.s.status));
      assert.equal(typeof image.s.error.code, "string");
      assert.equal(image.s.cost_usd, 0);
      assert.equal(micros(image.s.balance_usd), before);
      assert.equal(await balanceOf(user.api_key), before);

      // The stored copy cannot be written: the speech call is refunded (storage_error), nothing is kept.
      const blobs = gw.services.blobs;
      const put = blobs.put.bind(blobs);
      blobs.put = async () => {
        throw new Error("disk full");
      };
      try {
        const speech = await call(mcp, "generate_speech", { input: "Never kept.", voice_id: DEMO_ALPHA_VOICE_ID });
        assert.equal(speech.result.isError, true);
        assert.equal(speech.s.error.code, "storage_error");
        assert.equal(speech.s.status, 500);
        assert.equal(speech.s.cost_usd, 0);
        const usage = await usageOf(speech.s.request_id);
        assert.notEqual(usage.status, "succeeded");
      } finally {
        blobs.put = put;
      }
      assert.equal(await balanceOf(user.api_key), before);
      assert.equal(await ledgerSum(user.org_id), before);
    });

    test("a key's limits apply: a model outside its allow-list is refused (403 model_not_allowed) before any charge", async () => {
      const created = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { name: "sfx only", models: ["alpha-sfx"] } });
      assert.equal(created.status, 201);
      const limited = await connect(created.json.api_key);
      const before = await balanceOf(user.api_key);
      const r = await call(limited, "generate_speech", { input: "hi", voice_id: DEMO_ALPHA_VOICE_ID });
      assert.equal(r.result.isError, true);
      assert.equal(r.s.error.code, "model_not_allowed");
      assert.equal(r.s.status, 403);
      const ok = await call(limited, "generate_sound_effect", { prompt: "a bell" });
      assert.equal(ok.result.isError, undefined, JSON.stringify(ok.s));
      assert.equal(await balanceOf(user.api_key), before - micros(ok.s.cost_usd));
    });

    test("over a key's requests per minute: a tool call answers rate_limited as an isError result, other messages the native 429", async () => {
      const created = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { name: "slow agent", rpm: 3 } });
      assert.equal(created.status, 201);
      // initialize and notifications/initialized are the first two requests of the window.
      const slow = await connect(created.json.api_key);
      const before = await balanceOf(user.api_key);
      const first = await call(slow, "get_balance");
      assert.equal(first.result.isError, undefined);
      const refused = await call(slow, "generate_sound_effect", { prompt: "a bell" });
      assert.equal(refused.result.isError, true);
      assert.equal(refused.s.error.code, "rate_limited");
      assert.equal(refused.s.status, 429);
      assert.ok(refused.s.retry_after_s >= 1);
      assert.equal(refused.s.cost_usd, 0);
      assert.equal(await balanceOf(user.api_key), before);
      await assert.rejects(slow.listTools(), (err: Error & { code?: number }) => err.code === 429);
    });

    test("a test-mode key: priced and recorded, served by the simulator, no money moved", async () => {
      const created = await gw.request("POST", "/v1/auth/keys", { token: user.api_key, body: { name: "agent ci", mode: "test" } });
      assert.equal(created.status, 201);
      const testKey: string = created.json.api_key;
      assert.match(testKey, /^gw_test_/);
      const testMcp = await connect(testKey);
      const before = await balanceOf(user.api_key);
      const entries = await ledgerCount(user.org_id);
      const body = { input: "Testing, one two.", voice_id: DEMO_ALPHA_VOICE_ID };
      const { result, s } = await call(testMcp, "generate_speech", body);
      assert.equal(result.isError, undefined, JSON.stringify(result.content));
      assert.equal(s.test_mode, true);
      assert.equal(micros(s.cost_usd), quoteSpeech(getModel("alpha-multilingual-v2") as SpeechModel, body.input.length));
      assert.equal(micros(s.balance_usd), before, "the live balance, unchanged");
      const usage = await usageOf(s.request_id);
      assert.equal(usage.mode, "test");
      assert.equal(usage.cost_micros, micros(s.cost_usd));
      const image = await call(testMcp, "generate_image", { model: "imgA-v4", prompt: "a test" });
      assert.equal(image.s.status, "succeeded");
      assert.equal(image.s.test_mode, true);
      assert.equal(item(image.result, "image").mimeType, "image/png");
      const bal = await call(testMcp, "get_balance");
      assert.equal(bal.s.test_mode, true);
      assert.equal(await balanceOf(user.api_key), before);
      assert.equal(await ledgerCount(user.org_id), entries, "no ledger entry");

      // The HTTP answer carries the test-mode mark and the request id, as every native answer does.
      await gw.request("POST", "/mcp", { token: testKey, body: INIT, headers: MCP_HEADERS });
      const raw = await gw.request("POST", "/mcp", {
        token: testKey,
        headers: { ...MCP_HEADERS, "mcp-protocol-version": "2025-06-18" },
        body: { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_balance", arguments: {} } },
      });
      assert.equal(raw.status, 200);
      assert.equal(raw.headers.get("x-svc-test-mode"), "true");
      assert.equal(raw.json.result.structuredContent.request_id, raw.headers.get("x-svc-request-id"));
    // A paid tool call carries the native cost headers too.
    const paid = await gw.request("POST", "/mcp", {
      token: testKey,
      headers: { ...MCP_HEADERS, "mcp-protocol-version": "2025-06-18" },
      body: { jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "generate_sound_effect", arguments: { prompt: "a gong" } } },
    });
    const sc = paid.json.result.structuredContent;
    assert.equal(paid.headers.get("x-svc-model"), "alpha-sfx");
    assert.equal(micros(paid.headers.get("x-svc-cost-usd")), micros(sc.cost_usd));
    assert.equal(micros(paid.headers.get("x-svc-balance-usd")), micros(sc.balance_usd));
    assert.equal(paid.headers.get("x-svc-test-mode"), "true");
    });

    test("protocol errors are JSON-RPC errors: an unknown tool or method, a body that is not JSON, a batch", async () => {
      await assert.rejects(mcp.callTool({ name: "make_coffee", arguments: {} }), (err: Error & { code?: number }) => err.code === -32602);
      const headers = { ...MCP_HEADERS, "mcp-protocol-version": "2025-06-18" };
      const unknown = await gw.request("POST", "/mcp", { token: user.api_key, headers, body: { jsonrpc: "2.0", id: 3, method: "prompts/list" } });
      assert.equal(unknown.status, 200);
      assert.equal(unknown.json.error.code, -32601);
      const notJson = await gw.request("POST", "/mcp", { token: user.api_key, headers: { ...headers, "content-type": "application/json" }, body: "{not json" });
      assert.equal(notJson.status, 400);
      assert.equal(notJson.json.error.code, -32700);
      const batch = await gw.request("POST", "/mcp", { token: user.api_key, headers, body: [INIT, INIT] });
      assert.equal(batch.status, 400);
      assert.equal(batch.json.error.code, -32600);
      const notRpc = await gw.request("POST", "/mcp", { token: user.api_key, headers, body: { hello: "world" } });
      assert.equal(notRpc.status, 400);
      assert.equal(typeof notRpc.json.error.code, "number");
      const get = await gw.request("GET", "/mcp", { token: user.api_key });
      assert.equal(get.status, 405);
    });

    test("GET /llms.txt: public Markdown generated from the catalog, every model's price and every tool in it", async () => {
      const r = await gw.request("GET", "/llms.txt");
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type") ?? "", /^text\/markdown/);
      const text = Buffer.from(r.bytes).toString("utf8");
      assert.match(text, /^# Media Gateway\n\n> /);
      for (const m of enabledModels().filter((x) => ["speech", "music", "sfx", "image", "video"].includes(x.capability))) {
        assert.ok(text.includes(`${m.id} ${priceOf(m)}`), `${m.id} with its price`);
      }
      for (const m of TEXT_MODELS.filter((x) => x.enabled)) assert.ok(text.includes(m.id), m.id);
      for (const name of TOOL_NAMES) assert.ok(text.includes(`\`${name}\``), name);
      for (const link of ["/openapi.json", "/docs", "/mcp", "/elevenlabs", "/openai/v1", "/fal/proxy", "/replicate/v1", "Authorization: Bearer"]) assert.ok(text.includes(link), link);
      // The realtime sockets (D42, D43) with their ws:// URLs, the dialect's too.
      const ws = gw.url.replace(/^http/, "ws");
      for (const url of [
        `${ws}/v1/audio/speech/{voice_id}/stream-input`,
        `${ws}/v1/audio/transcriptions/realtime`,
        `${ws}/elevenlabs/v1/text-to-speech/{voice_id}/stream-input`,
        `${ws}/elevenlabs/v1/speech-to-text/realtime`,
      ]) {
        assert.ok(text.includes(url), url);
      }
      // The Replicate dialect (D47) among the vendor dialects, with its client's setup.
      assert.ok(text.includes(`new Replicate({ auth: apiKey, baseUrl: "${gw.url}/replicate/v1" })`), "the Replicate client's setup");
      const realtimeSection = text.slice(text.indexOf("### Realtime"), text.indexOf("### Music"));
      assert.ok(realtimeSection.includes("alpha-flash-v2-5") && !realtimeSection.includes("alpha-v3"), "the realtime speech models, alpha-v3 not among them");
    });
  });
}
