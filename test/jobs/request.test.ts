/**
 * The codec of a job row's `request_json` (jobs/request.ts): what a submit stores is what the runner
 * decodes, image and video alike, in the key order the rows always had.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeJobRequest, encodeJobRequest, isVideoRequest, jobRequestOf, requestedSeconds } from "../../src/jobs/request.ts";
import { validateImageJob, validateVideoJob } from "../../src/jobs/validate.ts";

describe("job request codec", () => {
  test("an image request round-trips, simulate mode last", () => {
    const spec = validateImageJob({ model: "imgA-v4", prompt: "a lighthouse", n: 2 });
    const request = jobRequestOf(spec, "slow");
    const json = encodeJobRequest(request);
    assert.deepEqual(Object.keys(JSON.parse(json) as object), ["model", "prompt", "n", "aspect", "width", "height", "quality", "output", "imageUrls", "parameters", "simulate"]);
    const back = decodeJobRequest(json);
    assert.deepEqual(back, request);
    assert.equal(isVideoRequest(back), false);
    assert.equal(requestedSeconds(back), null);
  });

  test("a video request round-trips with its seconds", () => {
    const spec = validateVideoJob({ model: "vidB-2-fast", prompt: "waves", duration: 3 }, { genmediaOnly: false });
    const back = decodeJobRequest(encodeJobRequest(jobRequestOf(spec, null)));
    assert.equal(isVideoRequest(back), true);
    assert.equal(requestedSeconds(back), 3);
    assert.equal(back.simulate, null);
  });

  test("a row that is not a stored request is refused", () => {
    assert.throws(() => decodeJobRequest("[]"), /not a stored job request/);
    assert.throws(() => decodeJobRequest('{"prompt":"x"}'), /not a stored job request/);
    assert.throws(() => decodeJobRequest("nope"), SyntaxError);
  });
});
