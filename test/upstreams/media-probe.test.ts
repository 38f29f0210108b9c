/**
 * Reading what a delivered output says about itself (D26): the PNG size and the MP4 length, from real
 * files rendered by the simulator and from hand-built headers; broken input gives null.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mp4DurationSec, pngDimensions } from "../../src/upstreams/media-probe.ts";
import { renderPng } from "../../src/upstreams/simulator/visual.ts";
import { renderMp4 } from "../../src/upstreams/simulator/video.ts";

/** An ISO BMFF box: 32-bit size, type, payload. */
function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.byteLength);
  head.write(type, 4, "latin1");
  return Buffer.concat([head, body]);
}

/** An `mvhd` payload of `version` with `timescale` and `duration` (the rest zero). */
function mvhd(version: 0 | 1, timescale: number, duration: number): Uint8Array {
  const p = Buffer.alloc(version === 1 ? 112 : 100);
  p[0] = version;
  const at = version === 1 ? 20 : 12;
  p.writeUInt32BE(timescale, at);
  if (version === 1) p.writeBigUInt64BE(BigInt(duration), at + 4);
  else p.writeUInt32BE(duration, at + 4);
  return box("mvhd", p);
}

describe("pngDimensions", () => {
  test("reads the IHDR size of a real PNG; refuses anything else", () => {
    assert.deepEqual(pngDimensions(renderPng({ prompt: "x", width: 96, height: 64, index: 0 })), { width: 96, height: 64 });
    assert.equal(pngDimensions(new Uint8Array(10)), null);
    assert.equal(pngDimensions(Buffer.from("GIF89a........................")), null);
  });
});

describe("mp4DurationSec", () => {
  test("the length of MP4s rendered by the simulator", async () => {
    for (const seconds of [1, 3]) {
      const mp4 = (await renderMp4({ prompt: "waves", durationSec: seconds })).body;
      assert.equal(mp4DurationSec(mp4), seconds);
    }
  });

  test("movie headers of version 0 and 1, a moov after the media data", () => {
    const ftyp = box("ftyp", Buffer.from("isom\0\0\0\0isom", "latin1"));
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("moov", mvhd(0, 1000, 6040))])), 6.04);
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("mdat", new Uint8Array(5000)), box("moov", mvhd(1, 90_000, 720_000))])), 8);
  });

  test("no movie header, a zero length or a truncated box: null", () => {
    const ftyp = box("ftyp", Buffer.from("isom\0\0\0\0", "latin1"));
    assert.equal(mp4DurationSec(new Uint8Array(0)), null);
    assert.equal(mp4DurationSec(ftyp), null);
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("moov", mvhd(0, 0, 100))])), null);
    assert.equal(mp4DurationSec(Buffer.concat([ftyp, box("moov", mvhd(0, 1000, 0))])), null);
    const whole = Buffer.concat([ftyp, box("moov", mvhd(0, 1000, 5000))]);
    assert.equal(mp4DurationSec(whole.subarray(0, whole.byteLength - 20)), null);
    assert.equal(mp4DurationSec(Buffer.from("<html>not a video</html>")), null);
  });
});
