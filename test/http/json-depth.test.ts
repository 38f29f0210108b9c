/**
 * Deeply nested request JSON (issue 10, point 1a): a body nested past MAX_JSON_DEPTH levels is refused
 * where it is parsed, with a 400 `invalid_request` naming the top-level field, before any route runs, so
 * nothing recursive (schema validation, `canonicalHash`, `JSON.stringify`) ever sees it and nothing is
 * charged. 5,000 levels used to overflow the stack in `canonicalHash` and answer 500.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance } from "../../src/billing/ledger.ts";
import { jsonDepthError, MAX_JSON_DEPTH } from "../../src/http/json-body.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** `{"a":{"a":...1...}}`, `levels` objects deep, as text (no recursive serializer involved). */
function nested(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
}

/** A JSON body whose field `field` holds `inner` (raw JSON text) after `fields`. */
function bodyWith(fields: Record<string, unknown>, field: string, inner: string): string {
  const head = JSON.stringify(fields).slice(0, -1);
  return `${head}${head === "{" ? "" : ","}${JSON.stringify(field)}:${inner}}`;
}

describe("jsonDepthError", () => {
  test("the body is level 1; a value at level MAX_JSON_DEPTH passes, one more level is refused", () => {
    // {"p": nested(k)} is k + 1 levels deep.
    assert.equal(jsonDepthError(JSON.parse(bodyWith({}, "p", nested(MAX_JSON_DEPTH - 1)))), null);
    const err = jsonDepthError(JSON.parse(bodyWith({}, "p", nested(MAX_JSON_DEPTH))));
    assert.equal(err?.status, 400);
    assert.equal(err?.code, "invalid_request");
    assert.equal(err?.param, "p");
  });

  test("arrays count as levels; a top-level array or a key that is not a plain name gives param null", () => {
    const deepArray = `${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`;
    assert.equal(jsonDepthError(JSON.parse(deepArray))?.param, null);
    assert.equal(jsonDepthError(JSON.parse(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`)), null);
    assert.equal(jsonDepthError(JSON.parse(bodyWith({}, "x".repeat(10_000), nested(100))))?.param, null);
    assert.equal(jsonDepthError(JSON.parse(bodyWith({}, "a b", nested(100))))?.param, null);
  });

  test("a million levels: no stack overflow", () => {
    const deep = JSON.parse(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);
    assert.equal(jsonDepthError(deep)?.status, 400);
  });

  test("scalars and shallow values pass", () => {
    for (const v of [null, 1, "s", true, {}, [], { a: [1, { b: 2 }] }]) assert.equal(jsonDepthError(v), null);
  });
});

describe("deeply nested request bodies over HTTP", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string };
  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
    await gw.deposit(user.user_id, 100);
  });
  after(async () => {
    await gw?.close();
  });

  const balance = async () => getBalance(gw.services.db.kysely, user.org_id);
  const jobCount = async () =>
    Number(
      (
        await gw.services.db.kysely
          .selectFrom("jobs")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("account_id", "=", user.org_id)
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** POSTs `body` (raw text) and asserts a 400 `invalid_request` D1 answer naming `param`, nothing charged. */
  async function assertRefused(path: string, body: string, param: string | null, contentType = "application/json") {
    const [before, jobsBefore] = [await balance(), await jobCount()];
    const res = await gw.request("POST", path, { token: user.api_key, body, headers: { "content-type": contentType } });
    assert.equal(res.status, 400, JSON.stringify(res.json));
    assert.deepEqual(res.json, {
      error: {
        code: "invalid_request",
        message: `The JSON body is nested too deeply (the limit is ${MAX_JSON_DEPTH} levels).`,
        type: "invalid_request_error",
        param,
      },
    });
    assert.equal(await balance(), before, "the balance did not move");
    assert.equal(await jobCount(), jobsBefore, "no job was created");
  }

  const JOB_ROUTES: Array<[string, Record<string, unknown>]> = [
    ["/v1/images/generations", { model: "imgA-v4", prompt: "a cat" }],
    ["/v1/videos/generations", { model: "vidA-3-pro", prompt: "waves", duration: 1 }],
    ["/v1/genmedia/jobs", { model: "vidD-3-fast", prompt: "p", duration: 2 }],
  ];

  for (const [path, fields] of JOB_ROUTES) {
    test(`POST ${path}: parameters 5,000 levels deep -> 400 invalid_request (param parameters), nothing charged`, async () => {
      await assertRefused(path, bodyWith(fields, "parameters", nested(5000)), "parameters");
    });

    test(`POST ${path}: an unknown field 5,000 levels deep -> 400 invalid_request (param that field), nothing charged`, async () => {
      await assertRefused(path, bodyWith(fields, "extra_field", nested(5000)), "extra_field");
    });
  }

  test("POST /v1/chat/completions (not a job route): a field 5,000 levels deep -> 400, nothing charged", async () => {
    await assertRefused(
      "/v1/chat/completions",
      bodyWith({ model: "fast", messages: [{ role: "user", content: "hi" }] }, "metadata", nested(5000)),
      "metadata",
    );
  });

  test("a body sent as `curl -d` sends it (the catch-all parser) is bounded too", async () => {
    const body = bodyWith(JOB_ROUTES[0][1], "parameters", nested(5000));
    await assertRefused("/v1/images/generations", body, "parameters", "application/x-www-form-urlencoded");
  });

  test("a top-level array 5,000 levels deep -> 400 with param null", async () => {
    await assertRefused("/v1/images/generations", `${"[".repeat(5000)}${"]".repeat(5000)}`, null);
  });

  test("a body at the depth limit is read as before (an unknown field is ignored)", async () => {
    const res = await gw.request("POST", "/v1/auth/register", {
      body: bodyWith({ email: `deep-${Date.now()}@example.com`, password: "correct horse battery" }, "extra", nested(MAX_JSON_DEPTH - 1)),
    });
    assert.ok(res.status === 200 || res.status === 201, JSON.stringify(res.json));
  });

  test("the gateway still serves", async () => {
    assert.equal((await gw.request("GET", "/healthz")).status, 200);
  });
});
