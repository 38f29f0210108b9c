/**
 * Golden hashes of the simulator's pictures: for fifty varied prompts (every subject, time of day,
 * colour and ground word, scenery mixes, abstract prompts, odd text), the scene plan, the PNG and the
 * SVG must stay the same byte for byte, as a still and as a video frame; so must a short clip. A change
 * of any of them changes what users get back for the same request (D10: a deterministic simulator); if
 * it is meant, record the new hashes and say why in the change.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { planImage, type RenderImageOptions } from "../../../src/upstreams/simulator/images/plan.ts";
import { renderPng } from "../../../src/upstreams/simulator/images/png.ts";
import { renderSvg } from "../../../src/upstreams/simulator/images/svg.ts";
import { renderMp4 } from "../../../src/upstreams/simulator/video.ts";

/** [prompt, still, frame]: the first 16 hex digits of the {@link hashOf} of each of its {@link variants}. */
const GOLDEN: readonly (readonly [string, string, string])[] = [
  ["a lighthouse at dawn", "9ad38ecd389b4aa6", "f6c66a3af7981ea3"],
  ["a striped red beacon by the sea at night", "cc77787d52e35d91", "b97603d3db072599"],
  ["a lighthouse below snowy mountains with seagulls and pine trees", "177285b14868626e", "b55f1fefe6d6603b"],
  ["a red fox in the snow", "22a7da4c543d760a", "1d3ae90b26ca5a98"],
  ["a wolf howling under the moon", "10d8946fbf323e9c", "5720961b345e1455"],
  ["a brown bear in a winter forest", "914357ab96b22b73", "7e0413c402a5aa17"],
  ["a puppy in the park at noon", "3e7cdc5c7cc00ead", "7cbc91cd91a4d333"],
  ["a deer and a horse in a meadow at sunrise", "a4fdc25236316e99", "81173d66976ef77b"],
  ["a lion at golden hour in the desert", "0d6580bc28e40cfd", "026a8293ac6d0b6d"],
  ["a tiger in the jungle", "153e953b3ef866e3", "540bd7067e134813"],
  ["a cat on the beach at sunset", "b16934ce8c486c7b", "a48f1db6d11b5db2"],
  ["a fox by the lighthouse", "94e3a3029f08d1da", "d723fad09ecdd1ae"],
  ["an eagle over the alps", "62487a2e47ea8f79", "d5d12dbb153ef858"],
  ["an owl in the woods at midnight", "74d5c06d150318da", "0e3111d8ce97274b"],
  ["seagulls over the harbour", "bb8152657bcab451", "14fcfe8d7f44d6a7"],
  ["snowy mountain peaks at sunrise", "06fd3c56ab600011", "cda58102eaf95875"],
  ["a volcano at dusk with a city below", "7e7a645e872dfcbb", "b592e20a656deb81"],
  ["rolling hills, green and sunny", "e00590af24e54635", "5383328d902ca3d4"],
  ["tokyo city skyline at night", "f0942fa90f3eb105", "9d6a3d8b7a31c5da"],
  ["downtown streets at twilight", "631f78786c246917", "1d1d561d33ee5acf"],
  ["a small town by the ocean", "f9923f05b1e333ba", "8fb903feb2cd5aa8"],
  ["a sailboat on the ocean", "7408044c2a755751", "938c632faacbd7f9"],
  ["big waves crashing on the coast, dark and stormy", "cc80a494faa61731", "90c3e693f25b02ac"],
  ["ships in a purple sea at dawn", "0117a88700b7bc76", "4e0de4a807ba0f36"],
  ["misty pine forest", "b3b72ef0595123bb", "e6b2fe55aa5c26eb"],
  ["an emerald jungle", "bbdab6664b4531ec", "1fde294188284278"],
  ["autumn trees in the evening", "3736a8750039286c", "97dc125fd543b128"],
  ["the full moon", "92d988fa2a72ce9b", "72e678f1a0582550"],
  ["a bright sun in the summer sky", "6d44c96a456b5f7c", "46be7121fb45eda2"],
  ["a purple galaxy with planets", "3a536dfaeef17a1f", "d99a5211f0c9123d"],
  ["a red sports car", "1dc68ae7e426056b", "1baefa790752df8f"],
  ["a blue truck in the sandy desert at night", "5b4e80e307337e3b", "6542f2fa4a67c3ed"],
  ["a yellow taxi in the city", "04d32c8bf7de3649", "8496828ebbc51f23"],
  ["a vase of roses", "4e1f7b8a35234250", "0ef5bd95d322484b"],
  ["pink tulips in a garden at dawn", "3071588e28564c02", "5e5d3090f26549ac"],
  ["sunflowers", "9d26c65aeafdb74f", "35ddffe9a9efdf0b"],
  ["portrait of an old man", "11224e0f6664d23b", "9ba263eb6c14db9c"],
  ["a robot selfie at night", "3b078b4daf9c2ee7", "fc7cb91081e566e5"],
  ["an astronaut girl among the stars", "1ce123019f49b830", "8f62281ba01f571b"],
  ["a woman in a turquoise dress on a beach", "11323dc6bb949428", "75e829f8c9ae36a5"],
  ["abstract geometric shapes", "310e94b3487c19bf", "6f2099dd2f179e66"],
  ["synthwave vibes", "1fecf5c0c1cdef60", "e5c1b2d8cecd9607"],
  ["pastel dreamy swirls", "7c4fbb09847314d8", "843c47badde81da8"],
  ["neon noir, dark and moody", "91bed43ee77373df", "2a3ac90068e1c9bf"],
  ["lavender and gold", "ab8328b74f4e0509", "737b3fcf8af1d924"],
  ["Cafe\u0301 cre\u0300me a\u0300 l'aube, A LIGHTHOUSE", "07c049f46d22f1a7", "891cf62abfe360b7"],
  ["", "e12781e4132bf374", "192c9dbb65bcbf34"],
  ["   ", "05aa4a202e1734ed", "182c5e2cd758389f"],
  ["logo for \"Tom & Jerry\" <cartoon> \u0001", "ccc3e948750c7a7f", "ace5bb4920f0b60d"],
  ["one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty", "5ea2d06ad10e327f", "c4991cb20eac3967"],
];

/** A portrait caught blinking (a frame at 2.9 s): {@link hashOf} of {@link BLINK}. */
const BLINK: RenderImageOptions = { prompt: "portrait of an old man", width: 200, height: 150, seed: "blink", timeSec: 2.9 };
const BLINK_GOLDEN = "70a5a63866f67a25";

/** SHA-256 (first 16 hex digits) of the short clip of the last test. */
const VIDEO_GOLDEN = "93cb49fe7a774c08";

/** The sizes the cases cycle through: landscape, portrait, square, wide, tiny. */
const SIZES = [
  [160, 120],
  [120, 200],
  [128, 128],
  [256, 108],
  [33, 7],
] as const;

/** The two variants of the `i`-th prompt: a still (a seed or none, index 0) and a video frame (a time, another index, seed and size). */
function variants(prompt: string, i: number): [RenderImageOptions, RenderImageOptions] {
  const [width, height] = SIZES[i % SIZES.length];
  return [
    { prompt, width, height, seed: i % 3 === 0 ? undefined : `model-${i % 3}` },
    { prompt, width: height, height: width, seed: i, index: 1 + (i % 3), timeSec: 2.9 + i * 0.41 },
  ];
}

/** The hash of one variant: the plan as JSON, then the PNG bytes, then the SVG text. */
function hashOf(opts: RenderImageOptions): string {
  return createHash("sha256")
    .update(JSON.stringify(planImage(opts)))
    .update(renderPng(opts))
    .update(renderSvg(opts))
    .digest("hex")
    .slice(0, 16);
}

describe("simulated pictures are byte-for-byte stable", () => {
  GOLDEN.forEach(([prompt, still, frame], i) => {
    test(JSON.stringify(prompt), () => {
      const [a, b] = variants(prompt, i);
      assert.deepEqual([hashOf(a), hashOf(b)], [still, frame]);
    });
  });

  test("a portrait frame caught blinking", () => {
    assert.equal(hashOf(BLINK), BLINK_GOLDEN);
  });

  test("no time, a NaN time and time 0 give the same plan", () => {
    const base = { prompt: "waves on a beach at sunset", width: 300, height: 200 };
    const a = JSON.stringify(planImage(base));
    assert.equal(JSON.stringify(planImage({ ...base, timeSec: Number.NaN })), a);
    assert.equal(JSON.stringify(planImage({ ...base, timeSec: 0 })), a);
  });

  test("a short video clip", async () => {
    const v = await renderMp4({ prompt: "a lighthouse on a stormy night", durationSec: 0.5, aspect: "1:1", seed: "vid" });
    assert.equal(createHash("sha256").update(v.body).digest("hex").slice(0, 16), VIDEO_GOLDEN);
  });
});
