/**
 * The OpenAPI document (D23: `GET /openapi.json` is public and lists every path of the spec and D8) and
 * the reference docs at `GET /docs`: public, self-contained (no external URL), assets served by the
 * gateway. Documenting routes must not change what they accept. The operator API (D9) is listed only for
 * the operator token: anyone else, a wrong token included, gets the public document.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import { publicDocument } from "../../src/http/openapi.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

/** Every operation the document must list: the spec's endpoints, D8 and the operations endpoints. */
const EXPECTED: [method: string, path: string][] = [
  ["post", "/v1/auth/register"],
  ["post", "/v1/auth/login"],
  ["get", "/v1/auth/me"],
  ["get", "/v1/auth/keys"],
  ["post", "/v1/auth/keys"],
  ["delete", "/v1/auth/keys/{key_id}"],
  ["get", "/v1/auth/limits"],
  ["get", "/v1/billing/ledger"],
  // D41: organizations, members and invites.
  ["post", "/v1/orgs"],
  ["get", "/v1/orgs"],
  ["get", "/v1/orgs/{org_id}"],
  ["patch", "/v1/orgs/{org_id}"],
  ["delete", "/v1/orgs/{org_id}"],
  ["get", "/v1/orgs/{org_id}/members"],
  ["patch", "/v1/orgs/{org_id}/members/{user_id}"],
  ["delete", "/v1/orgs/{org_id}/members/{user_id}"],
  ["post", "/v1/orgs/{org_id}/invites"],
  ["get", "/v1/orgs/{org_id}/invites"],
  ["delete", "/v1/orgs/{org_id}/invites/{invite_id}"],
  ["post", "/v1/invites/{token}/accept"],
  // D45: the organization's audit log.
  ["get", "/v1/orgs/{org_id}/audit-log"],
  // D44: budgets.
  ["get", "/v1/budgets"],
  ["post", "/v1/budgets"],
  ["get", "/v1/budgets/{budget_id}"],
  ["patch", "/v1/budgets/{budget_id}"],
  ["delete", "/v1/budgets/{budget_id}"],
  ["get", "/v1/pricing"],
  ["get", "/v1/limits/tiers"],
  ["get", "/v1/credits/pricing"],
  ["post", "/v1/audio/speech"],
  ["post", "/v1/audio/music"],
  ["post", "/v1/audio/sfx"],
  ["post", "/v1/audio/voice-design"],
  ["post", "/v1/audio/voice-clone"],
  ["get", "/v1/audio/voices"],
  ["get", "/v1/audio/voices/alpha/{voice_id}/preview.mp3"],
  ["post", "/v1/audio/transcriptions"],
  ["post", "/v1/audio/understand"],
  ["post", "/v1/images/generations"],
  ["post", "/v1/videos/generations"],
  ["post", "/v1/genmedia/jobs"],
  ["get", "/v1/jobs/{id}"],
  ["get", "/v1/jobs"],
  ["post", "/v1/jobs/{id}/cancel"],
  ["get", "/v1/jobs/{id}/events"],
  ["get", "/v1/gallery"],
  ["get", "/share/{job_id}"],
  ["get", "/v1/files/{key}"],
  ["post", "/v1/chat/completions"],
  ["post", "/v1/messages"],
  ["get", "/v1/models"],
  ["get", "/v1/models/recommend"],
  ["get", "/v1/capabilities"],
  ["get", "/healthz"],
  ["get", "/readyz"],
  ["get", "/metrics"],
  ["get", "/openapi.json"],
];

/** The operator API (D23 allows leaving it out: listed for the operator token only, and in the typed client). */
const OPERATOR: [method: string, path: string][] = [
  ["get", "/v1/admin/audit-log"],
  ["get", "/v1/admin/users"],
  ["get", "/v1/admin/users/{user_id}"],
  ["get", "/v1/admin/users/{user_id}/ledger"],
  ["get", "/v1/admin/users/{user_id}/requests"],
  ["get", "/v1/admin/users/{user_id}/usage"],
  ["post", "/v1/admin/users/{user_id}/deposits"],
  ["put", "/v1/admin/users/{user_id}/tier"],
  ["put", "/v1/admin/users/{user_id}/limits"],
  ["get", "/v1/admin/orgs"],
  ["get", "/v1/admin/orgs/{org_id}"],
  ["get", "/v1/admin/orgs/{org_id}/ledger"],
  ["get", "/v1/admin/orgs/{org_id}/requests"],
  ["get", "/v1/admin/orgs/{org_id}/usage"],
  ["post", "/v1/admin/orgs/{org_id}/deposits"],
  ["put", "/v1/admin/orgs/{org_id}/tier"],
  ["put", "/v1/admin/orgs/{org_id}/limits"],
  ["get", "/v1/admin/orgs/{org_id}/budgets"],
  ["post", "/v1/admin/orgs/{org_id}/budgets"],
  ["get", "/v1/admin/upstreams"],
  ["get", "/v1/admin/revenue"],
];

const PUBLIC = new Set([
  "post /v1/auth/register",
  "post /v1/auth/login",
  "get /v1/pricing",
  "get /v1/limits/tiers",
  "get /v1/credits/pricing",
  "get /v1/audio/voices/alpha/{voice_id}/preview.mp3",
  "get /share/{job_id}",
  "get /v1/files/{key}",
  "get /healthz",
  "get /readyz",
  "get /metrics",
  "get /openapi.json",
  "get /llms.txt",
  // Called by Stripe, verified by its signature (D33).
  "post /v1/billing/stripe/webhook",
]);

const HTTP_METHODS = ["get", "post", "put", "delete", "patch"];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is arbitrary JSON
type Json = any;

describe("OpenAPI document and reference docs", () => {
  let gw: TestGateway;
  /** The whole document, as the operator token reads it. */
  let doc: Json;
  /** The public document, as anyone else reads it. */
  let pub: Json;
  const fetchDoc = async (path: string, authorization?: string) => {
    const res = await fetch(`${gw.url}${path}`, { headers: authorization === undefined ? {} : { authorization } });
    assert.equal(res.status, 200, `GET ${path}`);
    return { headers: res.headers, json: (await res.json()) as Json };
  };
  const adminPaths = (d: Json) => Object.keys(d.paths).filter((p) => p.startsWith("/v1/admin"));
  before(async () => {
    gw = await startGateway("sqlite");
    const res = await gw.request("GET", "/openapi.json");
    assert.equal(res.status, 200, "GET /openapi.json without a key");
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    pub = res.json;
    doc = (await fetchDoc("/openapi.json", `Bearer ${ADMIN_TOKEN}`)).json;
  });
  after(async () => {
    await gw?.close();
  });

  const operation = (method: string, path: string): Json => doc.paths[path]?.[method];
  const jsonBody = (method: string, path: string): Json => operation(method, path).requestBody.content["application/json"].schema;

  test("OpenAPI 3.1 with info, the public base URL as server and the security schemes", () => {
    assert.match(doc.openapi, /^3\.1/);
    assert.equal(typeof doc.info.title, "string");
    assert.equal(typeof doc.info.version, "string");
    assert.ok(doc.info.description.length > 0);
    assert.deepEqual(doc.servers, [{ url: gw.services.config.publicBaseUrl }]);
    const schemes = doc.components.securitySchemes;
    assert.deepEqual(schemes.apiKey, { ...schemes.apiKey, type: "http", scheme: "bearer" });
    assert.deepEqual(schemes.xApiKey, { ...schemes.xApiKey, type: "apiKey", in: "header", name: "x-api-key" });
    assert.ok(operation("post", "/v1/messages").security.some((s: Json) => "xApiKey" in s));
  });

  test("valid OpenAPI 3.1 documents, the public one and the operator's (@readme/openapi-parser)", async () => {
    for (const d of [pub, doc]) {
      const result = await validate(structuredClone(d));
      assert.ok(result.valid, result.valid ? "" : compileErrors(result));
      assert.deepEqual(result.warnings, []);
    }
  });

  test("every endpoint of the spec and D8 is listed with its methods, the operator API too for the operator token, /docs is not", () => {
    for (const [method, path] of EXPECTED) assert.ok(operation(method, path), `${method.toUpperCase()} ${path} documented`);
    for (const [method, path] of EXPECTED) assert.deepEqual(pub.paths[path]?.[method], operation(method, path), `${method.toUpperCase()} ${path} public`);
    for (const [method, path] of OPERATOR) assert.ok(operation(method, path), `${method.toUpperCase()} ${path} documented`);
    const paths = Object.keys(doc.paths);
    assert.ok(!paths.some((p) => p.startsWith("/docs")), "docs routes hidden");
  });

  test("the public document leaves the operator API out: its paths, its tag, its security scheme", async () => {
    assert.deepEqual(adminPaths(pub), []);
    assert.deepEqual(Object.keys(pub.paths).sort(), Object.keys(doc.paths).filter((p) => !p.startsWith("/v1/admin")).sort(), "nothing else is left out");
    assert.ok(!pub.tags.some((t: Json) => t.name === "operator"));
    assert.equal(pub.components.securitySchemes.adminToken, undefined);
    assert.ok(!JSON.stringify(pub).includes("adminToken"), "no operation refers to the operator's scheme");
    assert.deepEqual(Object.keys(pub.components.schemas).sort(), Object.keys(doc.components.schemas).sort(), "the operator API uses no schema of its own today");
    const anonymous = await fetch(`${gw.url}/openapi.json`);
    assert.equal(anonymous.headers.get("cache-control"), "public, max-age=300");
    assert.match(anonymous.headers.get("vary") ?? "", /authorization/i);
  });

  test("the operator token gets the whole document, never cached by others; a wrong token or a customer's key the public one", async () => {
    const operator = await fetchDoc("/openapi.json", `Bearer ${ADMIN_TOKEN}`);
    assert.equal(adminPaths(operator.json).length, new Set(OPERATOR.map(([, p]) => p)).size);
    assert.equal(operator.headers.get("cache-control"), "private, no-store");
    assert.match(operator.headers.get("vary") ?? "", /authorization/i);
    const u = await gw.register();
    for (const authorization of [`Bearer ${ADMIN_TOKEN}x`, `Bearer ${ADMIN_TOKEN.slice(0, -1)}`, "Bearer wrong", `Bearer ${u.api_key}`, `Bearer ${u.session_token}`, `Basic ${ADMIN_TOKEN}`]) {
      const res = await fetchDoc("/openapi.json", authorization);
      assert.deepEqual(res.json, pub, authorization.slice(0, 12));
      assert.equal(res.headers.get("cache-control"), "public, max-age=300");
    }
  });

  test("/docs/json and /docs/yaml (what Swagger UI loads) follow the same rule", async () => {
    assert.deepEqual((await fetchDoc("/docs/json")).json, pub);
    assert.deepEqual(adminPaths((await fetchDoc("/docs/json", `Bearer ${ADMIN_TOKEN}`)).json).length, adminPaths(doc).length);
    assert.deepEqual((await fetchDoc("/docs/json", "Bearer wrong")).json, pub);
    const yaml = await (await fetch(`${gw.url}/docs/yaml`)).text();
    assert.match(yaml, /\/v1\/auth\/me/);
    assert.doesNotMatch(yaml, /\/v1\/admin|adminToken/);
    assert.match(await (await fetch(`${gw.url}/docs/yaml`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text(), /\/v1\/admin\/users/);
  });

  test("without GATEWAY_ADMIN_TOKEN nobody gets the operator API", async (t) => {
    const plain = await startGateway("sqlite", { GATEWAY_ADMIN_TOKEN: "" });
    t.after(() => plain.close());
    for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }, { authorization: "Bearer " }]) {
      const d = (await (await fetch(`${plain.url}/openapi.json`, { headers })).json()) as Json;
      assert.deepEqual(adminPaths(d), []);
    }
  });

  test("publicDocument: a schema only the operator API uses goes, with what only it references; shared and unused ones stay", () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const answer = (schema: Json) => ({ responses: { 200: { description: "ok", content: { "application/json": { schema } } } } });
    const whole = {
      openapi: "3.1.0",
      tags: [{ name: "auth" }, { name: "operator" }],
      paths: {
        "/v1/me": { get: { tags: ["auth"], security: [{ apiKey: [] }], ...answer(ref("Shared")) } },
        "/v1/admin/x": { get: { tags: ["operator"], security: [{ adminToken: [] }], ...answer(ref("OpOnly")) }, parameters: [] },
        // A path with a public and an operator operation keeps the public one.
        "/v1/mixed": { get: { tags: ["auth"], ...answer(ref("Shared")) }, post: { security: [{ adminToken: [] }], ...answer(ref("Shared")) } },
      },
      components: {
        securitySchemes: { apiKey: { type: "http" }, adminToken: { type: "http" } },
        schemas: { Shared: { type: "object" }, OpOnly: { type: "object", properties: { n: ref("Nested") } }, Nested: { type: "string" }, Unused: { type: "number" } },
      },
    };
    const before = structuredClone(whole);
    const out = publicDocument(whole) as Json;
    assert.deepEqual(whole, before, "the whole document is not changed");
    assert.deepEqual(Object.keys(out.paths), ["/v1/me", "/v1/mixed"]);
    assert.deepEqual(Object.keys(out.paths["/v1/mixed"]), ["get"]);
    assert.deepEqual(out.tags, [{ name: "auth" }]);
    assert.deepEqual(Object.keys(out.components.securitySchemes), ["apiKey"]);
    assert.deepEqual(Object.keys(out.components.schemas).sort(), ["Shared", "Unused"]);
  });

  test("the operator API: tag `operator`, the operator token's own bearer scheme, no customer key", () => {
    assert.deepEqual(doc.components.securitySchemes.adminToken, { ...doc.components.securitySchemes.adminToken, type: "http", scheme: "bearer" });
    assert.ok(doc.tags.some((t: Json) => t.name === "operator"));
    const operatorPaths = Object.entries<Json>(doc.paths).filter(([p]) => p.startsWith("/v1/admin"));
    assert.equal(operatorPaths.flatMap(([, item]) => HTTP_METHODS.filter((m) => item[m])).length, OPERATOR.length);
    for (const [method, path] of OPERATOR) {
      const op = operation(method, path);
      assert.deepEqual(op.tags, ["operator"], `${method} ${path}`);
      assert.deepEqual(op.security, [{ adminToken: [] }], `${method} ${path}`);
      assert.ok(op.responses["401"] && op.responses["404"], `${method} ${path}: 401 and 404`);
    }
  });

  test("every operation has a summary, a tag, an operationId, a success answer and the right security", () => {
    const ids = new Set<string>();
    const tags = new Set(doc.tags.map((t: Json) => t.name));
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const method of HTTP_METHODS.filter((m) => item[m])) {
        const op = item[method];
        const name = `${method} ${path}`;
        assert.ok(op.summary, `${name}: summary`);
        assert.equal(op.tags?.length, 1, `${name}: one tag`);
        assert.ok(tags.has(op.tags[0]), `${name}: tag ${op.tags[0]} declared`);
        assert.ok(op.operationId && !ids.has(op.operationId), `${name}: unique operationId`);
        ids.add(op.operationId);
        // A realtime socket's success is its upgrade (D42, D43): 101 Switching Protocols.
        assert.ok(Object.keys(op.responses).some((s) => s.startsWith("2") || s === "101"), `${name}: a 2xx (or a socket's 101) answer`);
        if (PUBLIC.has(name)) assert.deepEqual(op.security, [], `${name}: public`);
        else if (path.startsWith("/v1/admin/")) assert.deepEqual(op.security, [{ adminToken: [] }], `${name}: operator token`);
        else assert.ok(op.security.some((s: Json) => "apiKey" in s), `${name}: API key`);
      }
    }
  });

  test("the D1 error body is a shared component referenced by the error answers", () => {
    const error = doc.components.schemas.Error;
    assert.deepEqual(error.required, ["error"]);
    assert.deepEqual(error.properties.error.required, ["code", "message", "type", "param"]);
    assert.ok(error.properties.error.properties.type.enum.includes("billing_error"));
    const speech = operation("post", "/v1/audio/speech").responses;
    for (const status of ["400", "401", "402", "403", "502"]) {
      assert.deepEqual(speech[status].content["application/json"].schema, { $ref: "#/components/schemas/Error" }, `speech ${status}`);
    }
    assert.match(speech["403"].description, /voice_not_owned/);
  });

  test("request bodies are documented with fields, types, required fields, enums, defaults and limits", () => {
    const speech = jsonBody("post", "/v1/audio/speech");
    // `input` and `voice_id` have aliases (`text`, `voice`) and a per-model length: the service checks them.
    assert.match(speech.description, /`input` \(or `text`\) and `voice_id` \(or `voice`\) are required/);
    assert.match(speech.properties.input.description, /5000/);
    assert.equal(speech.properties.model.default, "alpha-multilingual-v2");
    assert.ok(speech.properties.model.enum.includes("beta-speech-hd"));
    assert.ok(speech.properties.response_format.enum.includes("ulaw_8000"));
    assert.equal(speech.properties.voice_settings.properties.stability.maximum, 1);
    assert.equal(speech.properties.stream.type, "boolean");

    const image = jsonBody("post", "/v1/images/generations");
    assert.deepEqual(image.required, ["model", "prompt"]);
    assert.ok(image.properties.model.enum.includes("imgB-2-pro"));
    assert.equal(image.properties.prompt.maxLength, 4000);
    assert.deepEqual([image.properties.n.minimum, image.properties.n.maximum], [1, 4]);
    assert.equal(image.properties.image_urls.maxItems, 10);
    assert.equal(image.properties.idempotency_key.maxLength, 128);
    assert.equal(image.properties.parameters.type, "object");
    assert.deepEqual(image.properties.quality.enum, ["low", "medium", "high"]);

    const video = jsonBody("post", "/v1/videos/generations");
    assert.deepEqual([video.properties.duration.minimum, video.properties.duration.maximum, video.properties.duration.default], [1, 10, 5]);
    assert.ok(jsonBody("post", "/v1/genmedia/jobs").properties.model.enum.every((m: string) => m.startsWith("vidD-")));

    const chat = jsonBody("post", "/v1/chat/completions");
    assert.deepEqual(chat.required, ["model", "messages"]);
    assert.equal(chat.properties.messages.type, "array");
    assert.ok(chat.properties.messages.items.properties.role.enum.includes("tool"));
    assert.equal(chat.properties.max_tokens.default, 4096);
    assert.equal(chat.properties.stream_options.properties.include_usage.type, "boolean");
    assert.ok(chat.properties.tools);

    const messages = jsonBody("post", "/v1/messages");
    assert.deepEqual(messages.required, ["model", "messages"]);
    assert.ok(messages.properties.system);

    const music = jsonBody("post", "/v1/audio/music");
    assert.deepEqual([music.properties.music_length_ms.minimum, music.properties.music_length_ms.maximum], [1000, 300000]);
    const sfx = jsonBody("post", "/v1/audio/sfx");
    assert.equal(sfx.properties.prompt_influence.default, 0.3);
    const design = jsonBody("post", "/v1/audio/voice-design");
    assert.deepEqual(design.properties.age_group.enum, ["child", "young", "middle-aged", "elderly"]);
  });

  test("multipart endpoints document their form parts", () => {
    const clone = operation("post", "/v1/audio/voice-clone").requestBody.content["multipart/form-data"].schema;
    assert.deepEqual(Object.keys(clone.properties).sort(), ["file", "model", "name"]);
    assert.equal(clone.properties.file.format, "binary");
    assert.deepEqual(clone.required, ["file"]);

    const transcription = operation("post", "/v1/audio/transcriptions").requestBody.content;
    assert.equal(transcription["multipart/form-data"].schema.properties.file.format, "binary");
    assert.equal(transcription["multipart/form-data"].schema.properties.model.default, "transcribe");
    assert.deepEqual(transcription["application/json"].schema.required, ["audio_url"]);
    const answer = operation("post", "/v1/audio/transcriptions").responses["200"].content["application/json"].schema;
    assert.deepEqual(answer.required, ["text"]);

    const understand = operation("post", "/v1/audio/understand");
    assert.deepEqual(understand.requestBody.content["multipart/form-data"].schema.required, ["file", "prompt"]);
    assert.deepEqual(understand.responses["200"].content["application/json"].schema.required, ["text", "model", "duration_sec"]);
  });

  test("answers are documented: job object (202 and 200), audio bytes with headers, voice list", () => {
    const images = operation("post", "/v1/images/generations").responses;
    assert.deepEqual(images["202"].content["application/json"].schema, { $ref: "#/components/schemas/MediaJob" });
    assert.ok(images["200"]);
    const job = doc.components.schemas.MediaJob;
    assert.deepEqual(job.properties.status.enum, ["pending", "processing", "succeeded", "failed", "refunded", "expired"]);
    assert.deepEqual(job.properties.cost_usd.type, ["number", "null"]);

    const speech = operation("post", "/v1/audio/speech").responses["200"];
    assert.ok(speech.content["audio/mpeg"]);
    assert.ok(speech.headers["X-Svc-Chars-Billed"]);
    assert.ok(operation("post", "/v1/audio/music").parameters.some((p: Json) => p.in === "query" && p.name === "save_to_blob"));

    const voices = operation("get", "/v1/audio/voices");
    assert.deepEqual(voices.responses["200"].content["application/json"].schema.required, ["object", "provider", "data"]);
    assert.deepEqual(voices.parameters.find((p: Json) => p.name === "provider").schema.enum, ["alpha", "beta", "all"]);
  });

  test("the documented schemas validate: optional bodies stay optional, messages name the field", async () => {
    const u = await gw.register();
    // An empty key request passes.
    const key = await gw.request("POST", "/v1/auth/keys", { token: u.api_key, body: {} });
    assert.equal(key.status, 201);
    // The same message as before the schemas validated (test/http/schema-errors.test.ts has more).
    const chat = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: {} });
    assert.equal(chat.status, 400);
    assert.equal(chat.json.error.param, "model");
    assert.equal(chat.json.error.message, "model is required.");
    // Unknown fields are still ignored.
    const me = await gw.request("POST", "/v1/auth/login", { body: { email: u.email, password: "correct horse battery", extra: 1 } });
    assert.equal(me.status, 200);
  });

  test("the document speaks to users: no internal decision or issue numbers in any description, summary or tag", () => {
    // Decision numbers ("D41") and issue numbers belong to the project's own docs, not to the API's users.
    const internal = /\bD\d{1,2}\b|\bissue \d+/i;
    const found: string[] = [];
    const walk = (value: unknown, at: string): void => {
      if (typeof value === "string") {
        if (internal.test(value)) found.push(`${at}: ${value.slice(0, 120)}`);
      } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${at}/${i}`));
      else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, `${at}/${k}`);
    };
    walk(doc, "");
    assert.deepEqual(found, [], "strings citing internal numbers (the operator's document included)");
    assert.ok(JSON.stringify(pub).length > 1000 && !internal.test(JSON.stringify(pub)), "the public document");
  });

  test("GET /docs carries the project's name and look, not the plugin's (no Fastify logo)", async () => {
    const html = await (await fetch(`${gw.url}/docs`)).text();
    assert.match(html, /<title>API reference · Media Gateway<\/title>/);
    assert.doesNotMatch(html, /swagger ui|fastify/i);
    assert.match(html, /href="[^"]*\/theme\/favicon\.svg"/);
    const init = await (await fetch(`${gw.url}/docs/static/swagger-initializer.js`)).text();
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)'/.exec(init);
    assert.ok(logo, "the top bar's logo is replaced");
    const svg = Buffer.from(logo[1], "base64").toString("utf8");
    assert.match(svg, /Media Gateway/);
    assert.doesNotMatch(svg, /fastify/i);
    const script = await fetch(`${gw.url}/docs/static/theme/media-gateway.js`);
    assert.equal(script.status, 200);
    assert.match(await script.text(), /"\/console\/"/, "the logo and a link lead back to the console");
  });

  test("GET /docs is public HTML whose assets are all served by the gateway", async () => {
    const res = await fetch(`${gw.url}/docs`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'self'/);
    const html = await res.text();
    assert.doesNotMatch(html, /(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i, "no external URL in the page");

    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(assets.some((a) => a.endsWith(".js")) && assets.some((a) => a.endsWith(".css")), "scripts and styles");
    for (const asset of assets) {
      assert.ok(asset.startsWith("/") && !asset.startsWith("//"), `${asset} is on this server`);
      const r = await fetch(new URL(asset, `${gw.url}/docs`));
      assert.equal(r.status, 200, asset);
      assert.ok((await r.arrayBuffer()).byteLength > 0, `${asset} not empty`);
    }

    // The UI loads the document from its own route; the initializer calls no validator service.
    const init = await (await fetch(`${gw.url}/docs/static/swagger-initializer.js`)).text();
    assert.match(init, /validatorUrl: null/);
    const spec = await fetch(`${gw.url}/docs/json`);
    assert.equal(spec.status, 200);
    assert.deepEqual(Object.keys(((await spec.json()) as Json).paths).sort(), Object.keys(pub.paths).sort());
  });
});
