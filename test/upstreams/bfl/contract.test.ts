/**
 * Contract tests of the BFL protocol against the strict loopback fake (fakes/bfl.ts, issue 27 point 3
 * and D35): the fake serves BFL's documented model endpoints and validates each submit as BFL's FastAPI
 * models do; every mapping the adapter makes passes them; a wrong field name, a width off the 16 px grid,
 * a bad enum, an unknown or retired model get BFL's own answers, called directly and through the adapter;
 * and a task that ends `Error` for its input is not retried on another source (D27), while BFL's
 * infrastructure failures are.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { BFL_FAKE_ENDPOINTS, startBflFake } from "../../../fakes/bfl.ts";
import type { BflFake } from "../../../fakes/bfl.ts";
import { validateInput } from "../../../fakes/input-schema.ts";
import { BFL_MODELS, imageCall } from "../../../src/upstreams/bfl/models.ts";
import { createBflSource } from "../../../src/upstreams/bfl/source.ts";
import type { BflSource } from "../../../src/upstreams/bfl/source.ts";
import type { AspectRatio, UpstreamHandle, UpstreamJobState } from "../../../src/upstreams/types.ts";
import { BFL_KEY, bflFailure, bflImage, pollUntil } from "./helpers.ts";

const REF = (i: number): string => `https://images.example.com/ref-${i}.png`;
const ASPECTS: readonly AspectRatio[] = ["1:1", "16:9", "9:16", "4:3", "3:4", "21:9"];

let fake: BflFake;
let source: BflSource;

before(async () => {
  fake = await startBflFake({ apiKey: BFL_KEY, pendingMs: 30 });
  source = createBflSource({ name: "bfl-main", baseUrl: fake.url, apiKey: BFL_KEY, timeoutMs: 3000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

type Failed = Extract<UpstreamJobState, { state: "failed" }>;

async function failed(handle: UpstreamHandle): Promise<Failed> {
  const state = await pollUntil(source, handle);
  assert.equal(state.state, "failed", JSON.stringify(state));
  return state as Failed;
}

function post(endpoint: string, body: unknown, base = fake.url): Promise<Response> {
  return fetch(`${base}/v1/${endpoint}`, { method: "POST", headers: { "x-key": BFL_KEY, "content-type": "application/json" }, body: JSON.stringify(body) });
}

interface Detail {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** The items of FastAPI's 422 `{detail: [...]}` (no `url`: FastAPI leaves pydantic's out). */
async function detailOf(res: Response): Promise<Detail[]> {
  assert.equal(res.status, 422);
  const body = (await res.json()) as { detail: Detail[] };
  assert.ok(Array.isArray(body.detail) && body.detail.length > 0, JSON.stringify(body));
  for (const item of body.detail) {
    assert.equal(item.loc[0], "body");
    assert.equal(typeof item.msg, "string");
    assert.ok(!("url" in item));
  }
  return body.detail;
}

describe("the fake serves BFL's model endpoints, and every mapping of the adapter passes their input models", () => {
  test("the default endpoints of BFL_MODELS are served", () => {
    for (const model of Object.values(BFL_MODELS)) assert.ok(Object.hasOwn(BFL_FAKE_ENDPOINTS, model.endpoint), model.endpoint);
  });

  test("every mapping (each aspect, sizes across 64..2048 and off the grid, references up to the limit) is valid", () => {
    let checked = 0;
    const sizes = [
      [1024, 1024],
      [2048, 2048],
      [2047, 1001],
      [70, 3000],
      [1, 1],
      [1456, 816],
    ];
    for (const [model, row] of Object.entries(BFL_MODELS)) {
      for (const references of [0, 1, row.maxReferences]) {
        for (const aspect of ASPECTS) {
          for (const [width, height] of sizes) {
            const imageUrls = Array.from({ length: references }, (_, i) => REF(i + 1));
            const call = imageCall(bflImage({ model, aspect, width, height, imageUrls }), {});
            assert.deepEqual(validateInput(BFL_FAKE_ENDPOINTS[call.endpoint], call.input), [], `${model} ${JSON.stringify(call.input)}`);
            checked++;
          }
        }
      }
    }
    assert.ok(checked > 250);
  });
});

describe("the fake refuses what BFL refuses (called directly)", () => {
  test("width 1001 is off BFL's 16 px grid: 422 multiple_of", async () => {
    const detail = await detailOf(await post("flux-2-pro", { prompt: "x", width: 1001, height: 1024 }));
    assert.deepEqual(detail.map((d) => [d.type, d.loc, d.msg, d.ctx]), [["multiple_of", ["body", "width"], "Input should be a multiple of 16", { multiple_of: 16 }]]);
  });

  test("a misspelt prompt: 422 missing prompt (the unknown field is ignored)", async () => {
    const detail = await detailOf(await post("flux-2-pro", { promt: "x", width: 1024, height: 1024 }));
    assert.deepEqual(detail.map((d) => [d.type, d.loc, d.msg]), [["missing", ["body", "prompt"], "Field required"]]);
  });

  test("enums, ranges, types, and the model validators (4 MP, aspect ratios, Ultra's prompt or image prompt)", async () => {
    const cases: [string, unknown, string, (string | number)[]][] = [
      ["flux-2-pro", { prompt: "x", output_format: "webp" }, "literal_error", ["body", "output_format"]],
      ["flux-2-pro", { prompt: "x", width: 32, height: 1024 }, "greater_than_equal", ["body", "width"]],
      ["flux-2-pro", { prompt: "x", safety_tolerance: 6 }, "less_than_equal", ["body", "safety_tolerance"]],
      ["flux-2-pro", { prompt: "x", seed: "lucky" }, "int_parsing", ["body", "seed"]],
      ["flux-2-pro", { prompt: ["x"] }, "string_type", ["body", "prompt"]],
      ["flux-2-pro", { prompt: "x", width: 4096, height: 4096 }, "value_error", ["body"]],
      ["flux-kontext-pro", { prompt: "x", aspect_ratio: "32:9" }, "value_error", ["body"]],
      ["flux-kontext-pro", { prompt: "x", aspect_ratio: "wide" }, "value_error", ["body"]],
      ["flux-kontext-pro", { prompt: "x", safety_tolerance: 7 }, "less_than_equal", ["body", "safety_tolerance"]],
      ["flux-pro-1.1-ultra", { aspect_ratio: "16:9" }, "value_error", ["body"]],
      ["flux-pro-1.1-ultra", { prompt: "x", image_prompt_strength: 2 }, "less_than_equal", ["body", "image_prompt_strength"]],
      ["flux-pro-1.1-ultra", { prompt: "x", raw: "sometimes" }, "bool_parsing", ["body", "raw"]],
    ];
    for (const [endpoint, body, type, loc] of cases) {
      const detail = await detailOf(await post(endpoint, body));
      assert.deepEqual([detail[0].type, detail[0].loc], [type, loc], `${endpoint} ${JSON.stringify(body)}`);
    }
    assert.equal(fake.requests.filter((r) => r.method === "POST").length, cases.length);
    // Accepted: nulls where BFL's fields are nullable, 2048 x 2048 (4 x 2^20 pixels), 21:9.
    assert.equal((await post("flux-2-pro", { prompt: "x", width: 2048, height: 2048, seed: null, output_format: null })).status, 200);
    assert.equal((await post("flux-kontext-pro", { prompt: "x", aspect_ratio: "21:9", input_image: null })).status, 200);
  });

  test("a model path BFL does not have answers FastAPI's 404", async () => {
    for (const path of ["flux-3-pro", "flux-pro-1.1-ultra/extra"]) {
      const res = await post(path, { prompt: "x" });
      assert.equal(res.status, 404, path);
      assert.deepEqual(await res.json(), { detail: "Not Found" });
    }
  });

  test("a retired model answers as an unknown one; the others still work", async () => {
    const retiring = await startBflFake({ apiKey: BFL_KEY, retired: ["flux-pro-1.1-ultra"] });
    try {
      const gone = await post("flux-pro-1.1-ultra", { prompt: "x" }, retiring.url);
      assert.equal(gone.status, 404);
      assert.deepEqual(await gone.json(), { detail: "Not Found" });
      assert.equal((await post("flux-2-pro", { prompt: "x" }, retiring.url)).status, 200);
    } finally {
      await retiring.close();
    }
  });
});

describe("through the adapter", () => {
  test("a retired model: BflError modelNotFound naming it, not retryable (D35)", async () => {
    const retiring = await startBflFake({ apiKey: BFL_KEY, retired: ["flux-pro-1.1-ultra"] });
    const s = createBflSource({ name: "bfl-retiring", baseUrl: retiring.url, apiKey: BFL_KEY });
    try {
      const err = await bflFailure(s.submitImage(bflImage({ model: "imgB-1.1-ultra" })));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "flux-pro-1.1-ultra");
      assert.equal(err.retryable, false);
      assert.equal(err.contentRejected, false);
      assert.equal(err.status, 404);
      assert.match(err.message, /^bfl-retiring: BFL has no model endpoint flux-pro-1\.1-ultra \(submit: HTTP 404: Not Found\)$/);
    } finally {
      await s.close();
      await retiring.close();
    }
  });

  test("a models override naming a model BFL does not have: modelNotFound naming it", async () => {
    const s = createBflSource({ name: "bfl-typo", baseUrl: fake.url, apiKey: BFL_KEY, models: { "imgB-2-pro": "flux-2-pr0" } });
    try {
      const err = await bflFailure(s.submitImage(bflImage()));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "flux-2-pr0");
      assert.equal(err.retryable, false);
    } finally {
      await s.close();
    }
  });

  test("an override to another model: the fields that model lacks are ignored, as BFL ignores unknown fields", async () => {
    // Kontext's mapping (aspect_ratio, input_image) sent to FLUX.2: aspect_ratio is not a FLUX.2 field.
    const s = createBflSource({ name: "bfl-cross", baseUrl: fake.url, apiKey: BFL_KEY, models: { "imgB-edit-pro": "flux-2-pro" } });
    try {
      const handle = await s.submitImage(bflImage({ model: "imgB-edit-pro", imageUrls: [REF(1)] }));
      assert.equal((await pollUntil(s, handle)).state, "succeeded");
    } finally {
      await s.close();
    }
  });

  test("a pass-through parameter BFL refuses: 422 at the submit, not retryable, BFL's field named", async () => {
    const err = await bflFailure(source.submitImage(bflImage({ parameters: { safety_tolerance: 9 } })));
    assert.equal(err.status, 422);
    assert.equal(err.retryable, false);
    assert.equal(err.modelNotFound, false);
    assert.match(err.message, /HTTP 422: safety_tolerance: Input should be less than or equal to 5 \(less_than_equal\)$/);
  });

  test("a task Error for its input (invalid_image): failed, not retryable, not content", async () => {
    const state = await failed(await source.submitImage(bflImage({ prompt: "x [fake:error-input]", imageUrls: [REF(1)] })));
    assert.equal(state.retryable, false);
    assert.equal(state.contentRejected, false);
    assert.match(state.message, /\(Error\): invalid_image: Input image could not be processed$/);
  });

  test("a task Error of BFL's own: failed, retryable", async () => {
    const state = await failed(await source.submitImage(bflImage({ prompt: "x [fake:error]" })));
    assert.equal(state.retryable, true);
  });
});
