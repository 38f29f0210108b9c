/**
 * `npm run fake-upstreams`: loopback fakes of the real providers' protocols, so a developer can run the
 * gateway's real adapter code on a laptop without keys or network (issue "Real upstreams, part 1"
 * point 7). Today: fal's queue (src/upstreams/fal/fake.ts), answering in fal's real shapes with media
 * from the simulator's renderers, and misbehaving on request (`[fake:429]`, `[fake:moderation]`, ... in a
 * prompt; the list is at the top of that file).
 *
 * Environment: FAKE_FAL_PORT (default 18480), FAKE_HOST (default 127.0.0.1), FAKE_KEY (the key the fakes
 * accept, default `fake-key`). Prints the `UPSTREAMS` value that points the gateway at them.
 */
import { startFalFake } from "../src/upstreams/fal/fake.ts";

const host = process.env.FAKE_HOST ?? "127.0.0.1";
const key = process.env.FAKE_KEY ?? "fake-key";
const fal = await startFalFake({ port: Number(process.env.FAKE_FAL_PORT ?? 18480), host, apiKey: key });

const upstreams = [{ name: "fal-fake", protocol: "fal", base_url: fal.url, api_key: "env:FAKE_KEY", families: ["imgA", "imgB", "vidA", "vidB", "vidC", "vidD"] }];
console.log(`fal queue fake at ${fal.url} (key: FAKE_KEY=${key})`);
console.log("\nRun the gateway against it, in another terminal:\n");
console.log(`  FAKE_KEY=${key} UPSTREAMS='${JSON.stringify(upstreams)}' npm start\n`);
console.log("Every image and video family then runs on the fal protocol; audio and text stay on the simulator.");

const stop = async () => {
  await fal.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
