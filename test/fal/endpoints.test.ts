/**
 * The fal dialect's reading of the fal adapter's table (D38) is the inverse of the adapter's own mapping:
 * for every row and variant of `FAL_MODELS`, the input `imageCall` / `videoCall` sends to fal, read back by
 * `jobRequestOf`, names the same catalog model and the same request (duration, size, images, image
 * inputs, pass-through parameters). And the targets the proxy serves or refuses.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FalInputError, jobRequestOf } from "../../src/http/dialects/fal/endpoints.ts";
import { readTarget } from "../../src/http/dialects/fal/targets.ts";
import { FAL_MODELS, imageCall, pickDuration, videoCall } from "../../src/upstreams/fal/models.ts";
import type { ImageRequest, VideoRequest } from "../../src/upstreams/types.ts";

const IMAGE = "https://example.com/frame.png";

describe("fal endpoint ids and inputs, read backwards (D38)", () => {
  for (const [modelId, model] of Object.entries(FAL_MODELS)) {
    for (const variant of ["text", "image"] as const) {
      if (model.endpoints[variant] === null) continue;
      test(`${modelId} (${variant}-to-x): the adapter's input reads back as the same request`, () => {
        const extra = { idempotencyKey: null, webhookUrl: null };
        if (model.kind === "video") {
          const req: VideoRequest = { model: modelId, prompt: "p", durationSec: model.durations[0], imageUrl: variant === "image" ? IMAGE : null, parameters: { seed: 3, aspect_ratio: "9:16" }, simulate: null };
          const call = videoCall(req, {});
          assert.equal(call.endpointId, model.endpoints[variant]);
          const back = jobRequestOf(call.endpointId, call.input, extra);
          assert.ok(back && back.kind === "video");
          assert.equal(back.body.model, modelId);
          assert.equal(back.body.prompt, "p");
          assert.equal(back.body.duration, model.durationFormat === null ? undefined : pickDuration(model.durations, req.durationSec));
          assert.equal(back.body.image_url, variant === "image" ? IMAGE : undefined);
          assert.deepEqual(back.body.parameters, { seed: 3, aspect_ratio: "9:16" });
        } else {
          const req: ImageRequest = {
            model: modelId,
            prompt: "p",
            n: 1,
            aspect: "16:9",
            width: 1344,
            height: 768,
            quality: null,
            output: "png",
            imageUrls: variant === "image" ? [IMAGE] : [],
            parameters: { seed: 3 },
            simulate: null,
          };
          const call = imageCall(req, {});
          assert.equal(call.endpointId, model.endpoints[variant]);
          const back = jobRequestOf(call.endpointId, call.input, extra);
          assert.ok(back && back.kind === "image");
          assert.equal(back.body.model, modelId);
          const sized = !(variant === "image" && model.noSizeOnImageVariant === true);
          assert.equal(back.body.size, !sized ? undefined : model.size === "width-height" ? "1344x768" : "16:9");
          assert.equal(back.body.n, model.count === "num_images" ? 1 : undefined);
          if (variant === "image") assert.deepEqual(back.body.image_urls ?? [back.body.image_url], [IMAGE]);
          else assert.equal(back.body.image_url ?? back.body.image_urls, undefined);
          assert.deepEqual(back.body.parameters, { seed: 3 });
        }
      });
    }
  }

  test("an endpoint no row serves: null (fal's 404); a field the gateway's model does not have: 422 literal_error", () => {
    assert.equal(jobRequestOf("fal-ai/veo3", { prompt: "p" }, { idempotencyKey: null, webhookUrl: null }), null, "fal-ai/veo3 was removed (D35)");
    assert.throws(
      () => jobRequestOf("fal-ai/minimax/hailuo-02/standard/image-to-video", { prompt: "p", image_url: IMAGE, resolution: "1080P" }, { idempotencyKey: null, webhookUrl: null }),
      (err: unknown) => err instanceof FalInputError && err.items[0].loc[1] === "resolution" && /'512P' or '768P'/.test(err.items[0].msg),
    );
    const hailuo = jobRequestOf("fal-ai/minimax/hailuo-02/standard/image-to-video", { prompt: "p", image_url: IMAGE }, { idempotencyKey: null, webhookUrl: null });
    assert.equal(hailuo?.body.model, "vidC-02-768p", "fal's default resolution");
  });

  test("targets: the five calls are read; everything else is refused", () => {
    assert.deepEqual(readTarget("POST", "https://queue.fal.run/fal-ai/flux-2-pro?fal_webhook=https%3A%2F%2Fh.example%2Fx"), {
      call: "submit",
      endpointId: "fal-ai/flux-2-pro",
      webhookUrl: "https://h.example/x",
    });
    assert.deepEqual(readTarget("POST", "https://fal.run/fal-ai/flux-pro/v1.1-ultra"), { call: "run", endpointId: "fal-ai/flux-pro/v1.1-ultra", webhookUrl: null });
    assert.deepEqual(readTarget("GET", "https://queue.fal.run/fal-ai/flux-pro/requests/job_1/status?logs=0"), { call: "status", app: "fal-ai/flux-pro", requestId: "job_1" });
    assert.deepEqual(readTarget("GET", "https://queue.fal.run/fal-ai/flux-pro/requests/job_1"), { call: "result", app: "fal-ai/flux-pro", requestId: "job_1" });
    assert.deepEqual(readTarget("PUT", "https://queue.fal.run/fal-ai/flux-pro/requests/job_1/cancel"), { call: "cancel", app: "fal-ai/flux-pro", requestId: "job_1" });
    for (const [method, target] of [
      ["POST", undefined],
      ["POST", ""],
      ["POST", "not a url"],
      ["POST", "http://queue.fal.run/fal-ai/flux-2-pro"],
      ["POST", "https://user:pw@queue.fal.run/fal-ai/flux-2-pro"],
      ["POST", "https://queue.fal.run:8443/fal-ai/flux-2-pro"],
      ["POST", "https://rest.alpha.fal.ai/storage/upload/initiate"],
      ["POST", "https://queue.fal.run.evil.example/fal-ai/flux-2-pro"],
      ["POST", "https://queue.fal.run/flux"],
      ["POST", "https://queue.fal.run/fal-ai/%2e%2e/x"],
      ["GET", "https://queue.fal.run/fal-ai/flux-2-pro"],
      ["GET", "https://queue.fal.run/fal-ai/flux-pro/requests/job_1/status/stream"],
      ["PUT", "https://queue.fal.run/fal-ai/flux-pro/requests/job_1"],
      ["DELETE", "https://queue.fal.run/fal-ai/flux-pro/requests/job_1/cancel"],
      ["GET", "https://fal.run/fal-ai/flux-2-pro"],
    ] as const) {
      assert.equal(typeof readTarget(method, target), "string", `${method} ${String(target)}`);
    }
  });
});
