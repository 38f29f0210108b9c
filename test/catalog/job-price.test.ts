/**
 * A job's price is one function of the catalog (catalog/job-price.ts): the quote a submit holds and the
 * amount its success captures come from it, and agree whenever the delivery says nothing that changes
 * the price (D3, D7, D19, D26).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { jobPrice, type PricedJob } from "../../src/catalog/job-price.ts";
import { MODELS } from "../../src/catalog/models.ts";
import { quoteImage, quoteVideo } from "../../src/catalog/quote.ts";
import type { ImageModel, VideoModel } from "../../src/catalog/types.ts";

const images = MODELS.filter((m): m is ImageModel => m.capability === "image");
const videos = MODELS.filter((m): m is VideoModel => m.capability === "video");

/** Orders a submit may hold for: every n and size of an image model, every allowed length of a video model. */
function orders(): PricedJob[] {
  const out: PricedJob[] = [];
  for (const model of images) {
    const quality = model.pricing.mode === "per-quality" ? model.pricing.defaultQuality : null;
    for (let n = 1; n <= model.maxN; n++) {
      for (const [width, height] of [
        [1024, 1024],
        [1448, 1448],
        [2048, 2048],
      ]) {
        out.push({ kind: "image", model, order: { n, quality, width, height } });
      }
    }
  }
  for (const model of videos) {
    const lengths = model.allowedDurations ?? Array.from({ length: model.maxDurationSec - model.minDurationSec + 1 }, (_, i) => model.minDurationSec + i);
    for (const durationSec of lengths) out.push({ kind: "video", model, order: { durationSec } });
  }
  return out;
}

describe("jobPrice (catalog/job-price.ts)", () => {
  test("the catalog has image and video models to price", () => {
    assert.ok(images.length > 0 && videos.length > 0);
  });

  test("the quote is the catalog's quote of the order (what the submit holds)", () => {
    for (const job of orders()) {
      const expected =
        job.kind === "video"
          ? quoteVideo(job.model, job.order.durationSec)
          : quoteImage(job.model, { n: job.order.n, quality: job.order.quality ?? undefined, width: job.order.width, height: job.order.height });
      assert.equal(jobPrice(job), expected, `${job.model.id} ${JSON.stringify(job.order)}`);
    }
  });

  test("the capture equals the quote when the delivery is what was asked for, or unknown", () => {
    for (const job of orders()) {
      const held = jobPrice(job);
      const label = `${job.model.id} ${JSON.stringify(job.order)}`;
      assert.equal(jobPrice(job, { heldMicros: held, delivered: null }), held, `${label}: nothing known`);
      const asked =
        job.kind === "video"
          ? { megapixels: null, size: null, durationSec: job.order.durationSec }
          : { megapixels: null, size: { width: job.order.width, height: job.order.height }, durationSec: null };
      assert.equal(jobPrice(job, { heldMicros: held, delivered: asked }), held, `${label}: delivered as asked`);
    }
  });

  test("the capture never exceeds the hold, and charges less for less delivered (D26)", () => {
    const perSecond = videos.find((m) => m.pricing.mode === "per-second" && (m.allowedDurations === null || m.allowedDurations.length > 1));
    assert.ok(perSecond, "a per-second video model");
    const longest = perSecond.allowedDurations ? Math.max(...perSecond.allowedDurations) : perSecond.maxDurationSec;
    const job: PricedJob = { kind: "video", model: perSecond, order: { durationSec: longest } };
    const held = jobPrice(job);
    assert.equal(jobPrice(job, { heldMicros: held, delivered: { megapixels: null, size: null, durationSec: longest + 5 } }), held, "more seconds: the hold");
    assert.equal(jobPrice(job, { heldMicros: held, delivered: { megapixels: null, size: null, durationSec: 1.4 } }), quoteVideo(perSecond, 1), "1.4 s: 1 second");

    const perMp = images.find((m) => m.pricing.mode === "per-mp");
    assert.ok(perMp, "a per-mp image model");
    const image: PricedJob = { kind: "image", model: perMp, order: { n: 1, quality: null, width: 2048, height: 2048 } };
    const imageHeld = jobPrice(image);
    assert.equal(jobPrice(image, { heldMicros: imageHeld, delivered: { megapixels: 1, size: null, durationSec: null } }), 41_000, "1 MP reported");
    assert.equal(jobPrice(image, { heldMicros: imageHeld, delivered: { megapixels: null, size: { width: 1448, height: 1448 }, durationSec: null } }), 61_000, "2 MP from the header");
    assert.equal(jobPrice(image, { heldMicros: 41_000, delivered: { megapixels: 4, size: null, durationSec: null } }), 41_000, "never above the hold");
  });
});
