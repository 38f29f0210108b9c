/**
 * The typed client (packages/client, issue 9): its generated types match the document the gateway
 * serves, and calls through it to every resource answer what the document says, checked twice: by the
 * TypeScript compiler (paths, parameters, bodies, answer fields) and at run time against the documented
 * response schema. A drift between the route schemas and the server breaks this file.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { CLIENT_SCHEMA_PATH, renderClientSchema } from "../../scripts/generate-client.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

test("the committed client types are those of the current document (else: npm run generate:client)", async () => {
  const committed = readFileSync(CLIENT_SCHEMA_PATH, "utf8");
  assert.ok(committed === (await renderClientSchema()), `${CLIENT_SCHEMA_PATH} is stale: run npm run generate:client and commit it`);
});

describe("calls through the typed client answer as documented", () => {
  let gw: TestGateway;
  let user: { user_id: string; api_key: string; session_token: string; email: string };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);

  /** Asserts that `body` matches the documented answer of `method path` for `status` (JSON). */
  const documented = (method: string, path: string, status: number, body: unknown) => {
    const pointer = `/paths/${path.replaceAll("~", "~0").replaceAll("/", "~1")}/${method}/responses/${status}/content/application~1json/schema`;
    const validate = ajv.getSchema(`gateway-openapi#${pointer}`);
    assert.ok(validate, `${method.toUpperCase()} ${path} documents a JSON ${status}`);
    assert.ok(validate(body), `${method.toUpperCase()} ${path} ${status}: ${ajv.errorsText(validate.errors)}`);
  };

  before(async () => {
    gw = await startGateway("sqlite");
    const doc = (await gw.client().GET("/openapi.json")).data as Record<string, unknown>;
    ajv.addSchema({ ...doc, $id: "gateway-openapi" });
    user = await gw.register();
    await gw.deposit(user.user_id, 20);
  });
  after(async () => {
    await gw?.close();
  });

  test("the documented-answer check refuses an answer that does not match", () => {
    assert.throws(() => documented("get", "/v1/auth/me", 200, { user_id: 1 }), /user_id|required/);
  });

  test("auth: account, limits, keys (create, list, delete)", async () => {
    const api = gw.client(user.api_key);
    const me = await api.GET("/v1/auth/me");
    assert.equal(me.data?.user_id, user.user_id);
    documented("get", "/v1/auth/me", 200, me.data);
    documented("get", "/v1/auth/limits", 200, (await api.GET("/v1/auth/limits")).data);

    const created = await api.POST("/v1/auth/keys", { body: { name: "ci" } });
    assert.equal(created.response.status, 201);
    documented("post", "/v1/auth/keys", 201, created.data);
    const list = await api.GET("/v1/auth/keys");
    assert.ok(list.data?.data.some((k) => k.key_id === created.data?.key_id));
    documented("get", "/v1/auth/keys", 200, list.data);
    const del = await api.DELETE("/v1/auth/keys/{key_id}", { params: { path: { key_id: created.data?.key_id ?? "" } } });
    assert.equal(del.data?.deleted, true);

    const login = await gw.client().POST("/v1/auth/login", { body: { email: user.email, password: "correct horse battery" } });
    documented("post", "/v1/auth/login", 200, login.data);
    const bad = await gw.client("nope").GET("/v1/auth/me");
    assert.equal(bad.error?.error.code, "auth_error");
    documented("get", "/v1/auth/me", 401, bad.error);
  });

  test("billing and catalog: ledger page, pricing, tiers", async () => {
    const ledger = await gw.client(user.api_key).GET("/v1/billing/ledger", { params: { query: { limit: "5" } } });
    assert.ok((ledger.data?.data.length ?? 0) > 0);
    documented("get", "/v1/billing/ledger", 200, ledger.data);
    const tooMany = await gw.client(user.api_key).GET("/v1/billing/ledger", { params: { query: { limit: "500" } } });
    assert.equal(tooMany.error?.error.param, "limit");

    const pricing = await gw.client().GET("/v1/pricing");
    assert.equal(pricing.data?.object, "pricing.catalog");
    documented("get", "/v1/pricing", 200, pricing.data);
    documented("get", "/v1/limits/tiers", 200, (await gw.client().GET("/v1/limits/tiers")).data);
  });

  test("models: list, recommendation, capabilities", async () => {
    const api = gw.client(user.api_key);
    const models = await api.GET("/v1/models", { params: { query: { capability: "speech" } } });
    assert.ok(models.data?.data.every((m) => m.capabilities.includes("speech")));
    documented("get", "/v1/models", 200, models.data);
    documented("get", "/v1/models/recommend", 200, (await api.GET("/v1/models/recommend", { params: { query: { agent: "coding" } } })).data);
    documented("get", "/v1/capabilities", 200, (await api.GET("/v1/capabilities")).data);
  });

  test("audio: speech bytes, music as a stored generation, a sound effect, and the error codes", async () => {
    const api = gw.client(user.api_key);
    const speech = await api.POST("/v1/audio/speech", { body: { input: "Hello.", voice_id: DEMO_ALPHA_VOICE_ID }, parseAs: "arrayBuffer" });
    assert.equal(speech.response.status, 200);
    assert.match(speech.response.headers.get("content-type") ?? "", /^audio\/mpeg/);
    assert.ok((speech.data?.byteLength ?? 0) > 0);
    const unknown = await api.POST("/v1/audio/speech", { body: { model: "x".repeat(300) as "alpha-v3", input: "Hello.", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(unknown.error?.error.code, "not_a_tts_model");
    documented("post", "/v1/audio/speech", 400, unknown.error);

    const music = await api.POST("/v1/audio/music", { params: { query: { save_to_blob: "1" } }, body: { prompt: "calm piano", music_length_ms: 3000 } });
    assert.ok(typeof music.data === "object" && music.data.object === "audio.generation");
    documented("post", "/v1/audio/music", 200, music.data);
    const sfx = await api.POST("/v1/audio/sfx", { body: { prompt: "a door creaks" }, parseAs: "arrayBuffer" });
    assert.equal(sfx.response.status, 200);
  });

  test("voices: library and voice design", async () => {
    const api = gw.client(user.api_key);
    const voices = await api.GET("/v1/audio/voices", { params: { query: { provider: "beta" } } });
    assert.equal(voices.data?.provider, "beta");
    documented("get", "/v1/audio/voices", 200, voices.data);
    const design = await api.POST("/v1/audio/voice-design", { body: { description: "A warm narrator.", gender: "female" } });
    assert.match(design.data?.voice_id ?? "", /^svc_/);
    documented("post", "/v1/audio/voice-design", 200, design.data);
  });

  test("media jobs: an image and a video job polled to the end, then the gallery", async () => {
    const api = gw.client(user.api_key);
    const image = await api.POST("/v1/images/generations", { body: { model: "imgA-v4", prompt: "a red fox in snow" } });
    assert.equal(image.response.status, 202);
    documented("post", "/v1/images/generations", 202, image.data);
    const video = await api.POST("/v1/videos/generations", { body: { model: "vidA-3-pro", prompt: "waves", duration: 1 } });
    assert.equal(video.response.status, 202);
    const tooLong = await api.POST("/v1/videos/generations", { body: { model: "vidA-3-pro", prompt: "p".repeat(4001) } });
    assert.equal(tooLong.error?.error.code, "invalid_prompt");

    for (const id of [image.data?.id ?? "", video.data?.id ?? ""]) {
      const done = await gw.waitForJob(user.api_key, id);
      assert.equal(done.json.status, "succeeded", id);
      documented("get", "/v1/jobs/{id}", 200, done.json);
    }
    const gallery = await api.GET("/v1/gallery", { params: { query: { limit: "10" } } });
    assert.ok((gallery.data?.data.length ?? 0) >= 2);
    documented("get", "/v1/gallery", 200, gallery.data);
  });

  test("text: chat completions and messages", async () => {
    const api = gw.client(user.api_key);
    const chat = await api.POST("/v1/chat/completions", { body: { model: "fast", messages: [{ role: "user", content: "hi" }] } });
    assert.ok(typeof chat.data === "object" && chat.data.object === "chat.completion");
    documented("post", "/v1/chat/completions", 200, chat.data);
    const message = await api.POST("/v1/messages", { body: { model: "fast", max_tokens: 64, messages: [{ role: "user", content: "hi" }] } });
    assert.ok(typeof message.data === "object" && message.data.type === "message");
    documented("post", "/v1/messages", 200, message.data);
  });
});
