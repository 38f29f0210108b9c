/**
 * The `X-Svc-*` cost headers (src/http/cost-headers.ts): names and value formats, set only for the
 * fields given, the fallback pair only above layer 0.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import Fastify from "fastify";
import { type CostHeaderFields, setCostHeaders } from "../../src/http/cost-headers.ts";

async function headersFor(fields: CostHeaderFields): Promise<Record<string, unknown>> {
  const app = Fastify();
  app.get("/", async (_req, reply) => setCostHeaders(reply, fields).send("ok"));
  try {
    const res = await app.inject({ method: "GET", url: "/" });
    return Object.fromEntries(Object.entries(res.headers).filter(([k]) => k.startsWith("x-svc-")));
  } finally {
    await app.close();
  }
}

test("a paid answer: model, cost and balance in USD, characters and rounded seconds", async () => {
  assert.deepEqual(
    await headersFor({ model: "m", costMicros: 1_234_500, balanceMicros: 8_400_000, charsBilled: 12, durationSec: 2.34567 }),
    {
      "x-svc-model": "m",
      "x-svc-chars-billed": "12",
      "x-svc-duration-sec": "2.346",
      "x-svc-cost-usd": "1.2345",
      "x-svc-balance-usd": "8.4",
    },
  );
});

test("a stream start: only the model; the fallback pair only when a substitute answered", async () => {
  assert.deepEqual(await headersFor({ model: "m", fallbackLayer: 0 }), { "x-svc-model": "m" });
  assert.deepEqual(await headersFor({ model: "eq", fallbackLayer: 2 }), {
    "x-svc-fallback": "true",
    "x-svc-fallback-layer": "2",
    "x-svc-model": "eq",
  });
});
