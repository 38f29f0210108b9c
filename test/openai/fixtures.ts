/**
 * Fixtures of the OpenAI dialect's tests: a small real PNG (the simulator's placeholder encoder), to upload
 * as a reference image.
 */
import { renderPlaceholderPng } from "../../src/upstreams/simulator/images/png.ts";

/** A 64x64 PNG. */
export function tinyPng(): Buffer {
  return Buffer.from(renderPlaceholderPng(64, 64));
}
