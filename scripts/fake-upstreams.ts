/**
 * `npm run fake-upstreams`: loopback fakes of the real providers' protocols, so a developer can run the
 * gateway's real adapter code on a laptop without keys or network (issues "Real upstreams", parts 1 and
 * 2): fal's queue (fakes/fal.ts), Black Forest Labs (fakes/bfl.ts), OpenAI
 * images (fakes/openai-images.ts), two ElevenLabs accounts
 * (fakes/elevenlabs.ts), MiniMax (fakes/minimax.ts) and OpenAI audio
 * (fakes/openai-audio.ts). Each answers in its provider's real shapes with real
 * media and misbehaves on request: `[fake:429]`, `[fake:500]`, ... in a prompt or text (each fake lists
 * its markers at the top of its file), or for every request with `FAKE_FAL_MARKERS`, `FAKE_BFL_MARKERS`,
 * `FAKE_OPENAI_MARKERS`, `FAKE_ELEVENLABS_MARKERS` (the first ElevenLabs account only),
 * `FAKE_MINIMAX_MARKERS`, `FAKE_OPENAI_AUDIO_MARKERS` (comma lists). `FAKE_FAL_RETIRED`, `FAKE_BFL_RETIRED`,
 * `FAKE_OPENAI_RETIRED`, `FAKE_OPENAI_AUDIO_RETIRED`, `FAKE_ELEVENLABS_RETIRED` (the first account only) and
 * `FAKE_MINIMAX_RETIRED` (comma lists of upstream ids: fal endpoint ids, BFL model endpoints, model ids, e.g.
 * `FAKE_FAL_RETIRED=fal-ai/veo3.1/fast`, `FAKE_OPENAI_RETIRED=gpt-image-2`) make a fake answer those as its
 * provider answers a removed model (D35).
 *
 * It writes the `UPSTREAMS` file that points the gateway at them (`FAKE_UPSTREAMS_FILE`, default
 * `data/upstreams.fake.json`): imgA, imgB and vidA-vidD on fal, imgB also on bfl (the second source:
 * `FAKE_FAL_MARKERS=500` shows the failover), imgC on openai; alpha audio on elevenlabs with a second
 * elevenlabs account behind it (`FAKE_ELEVENLABS_MARKERS=500` shows the failover), beta audio on minimax
 * (also vidC's second source), transcription and audio understanding on openai audio. Then it prints the
 * command to start the gateway with it.
 *
 * Environment: FAKE_FAL_PORT (default 18480), FAKE_BFL_PORT (18481), FAKE_OPENAI_PORT (18482),
 * FAKE_ELEVENLABS_PORT (18483), FAKE_ELEVENLABS_BACKUP_PORT (18484), FAKE_MINIMAX_PORT (18485),
 * FAKE_OPENAI_AUDIO_PORT (18486), FAKE_HOST (127.0.0.1), FAKE_KEY (the key every fake accepts, default
 * `fake-key`). A port of 0 picks a free one. Each fake prints one line per request it answers (method, path,
 * status; `FAKE_LOG_REQUESTS=0` turns them off).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { startBflFake } from "../fakes/bfl.ts";
import { startFalFake } from "../fakes/fal.ts";
import { startOpenAIImagesFake } from "../fakes/openai-images.ts";
import { startElevenLabsFake } from "../fakes/elevenlabs.ts";
import { startMiniMaxFake } from "../fakes/minimax.ts";
import { startOpenAIAudioFake } from "../fakes/openai-audio.ts";

const env = process.env;
// One line per request each fake answers (fakes/loopback.ts); FAKE_LOG_REQUESTS=0 silences them.
env.FAKE_LOG_REQUESTS ??= "1";
const host = env.FAKE_HOST ?? "127.0.0.1";
const key = env.FAKE_KEY ?? "fake-key";
const markers = (name: string): string[] => (env[name] ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "");
const port = (name: string, fallback: number): number => Number(env[name] ?? fallback);

const fal = await startFalFake({ port: port("FAKE_FAL_PORT", 18480), host, apiKey: key, markers: markers("FAKE_FAL_MARKERS"), retired: markers("FAKE_FAL_RETIRED") });
const bfl = await startBflFake({ port: port("FAKE_BFL_PORT", 18481), host, apiKey: key, markers: markers("FAKE_BFL_MARKERS"), retired: markers("FAKE_BFL_RETIRED") });
const openai = await startOpenAIImagesFake({ port: port("FAKE_OPENAI_PORT", 18482), host, apiKey: key, markers: markers("FAKE_OPENAI_MARKERS"), retired: markers("FAKE_OPENAI_RETIRED") });
const elevenlabs = await startElevenLabsFake({ port: port("FAKE_ELEVENLABS_PORT", 18483), host, apiKey: key, markers: markers("FAKE_ELEVENLABS_MARKERS"), retired: markers("FAKE_ELEVENLABS_RETIRED") });
const elevenlabsBackup = await startElevenLabsFake({ port: port("FAKE_ELEVENLABS_BACKUP_PORT", 18484), host, apiKey: key });
const minimax = await startMiniMaxFake({ port: port("FAKE_MINIMAX_PORT", 18485), host, apiKey: key, markers: markers("FAKE_MINIMAX_MARKERS"), retired: markers("FAKE_MINIMAX_RETIRED") });
const openaiAudio = await startOpenAIAudioFake({
  port: port("FAKE_OPENAI_AUDIO_PORT", 18486),
  host,
  apiKey: key,
  markers: markers("FAKE_OPENAI_AUDIO_MARKERS"),
  retired: markers("FAKE_OPENAI_AUDIO_RETIRED"),
});
// The MiniMax fake serves its video files from another host name (as MiniMax's CDN is another host):
// trusting it lets the gateway download them directly instead of through the SSRF-safe fetch.
const minimaxFiles = new URL(minimax.url).port;

const upstreams = [
  { name: "fal-fake", protocol: "fal", base_url: fal.url, api_key: "env:FAKE_KEY", families: ["imgA", "imgB", "vidA", "vidB", "vidC", "vidD"], max_concurrency: 8 },
  { name: "bfl-fake", protocol: "bfl", base_url: bfl.url, api_key: "env:FAKE_KEY", families: ["imgB"], max_concurrency: 8 },
  { name: "openai-fake", protocol: "openai", base_url: `${openai.url}/v1`, api_key: "env:FAKE_KEY", families: ["imgC"], max_concurrency: 8 },
  { name: "elevenlabs-fake", protocol: "elevenlabs", base_url: elevenlabs.url, api_key: "env:FAKE_KEY", families: ["alpha"], max_concurrency: 16 },
  { name: "elevenlabs-backup-fake", protocol: "elevenlabs", base_url: elevenlabsBackup.url, api_key: "env:FAKE_KEY", families: ["alpha"], max_concurrency: 16 },
  {
    name: "minimax-fake",
    protocol: "minimax",
    base_url: minimax.url,
    api_key: "env:FAKE_KEY",
    families: ["beta", "vidC"],
    max_concurrency: 16,
    trusted_hosts: [`localhost:${minimaxFiles}`],
  },
  { name: "openai-audio-fake", protocol: "openai", base_url: `${openaiAudio.url}/v1`, api_key: "env:FAKE_KEY", families: ["transcribe", "understand"], max_concurrency: 8 },
  // Realtime transcription (D43) on ElevenLabs' Scribe socket: after the OpenAI source, so HTTP transcription
  // stays there; the socket goes to the first transcribe source that has one.
  { name: "elevenlabs-scribe-fake", protocol: "elevenlabs", base_url: elevenlabs.url, api_key: "env:FAKE_KEY", families: ["transcribe"], max_concurrency: 16 },
];
const file = env.FAKE_UPSTREAMS_FILE ?? "data/upstreams.fake.json";
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(upstreams, null, 2)}\n`);

console.log(`fal queue fake     ${fal.url}`);
console.log(`bfl fake           ${bfl.url}`);
console.log(`openai images fake ${openai.url}/v1`);
console.log(`elevenlabs fakes   ${elevenlabs.url} and ${elevenlabsBackup.url} (backup)`);
console.log(`minimax fake       ${minimax.url}`);
console.log(`openai audio fake  ${openaiAudio.url}/v1`);
console.log(`(every fake accepts the key FAKE_KEY=${key})`);
console.log(`\nWrote ${file}. Run the gateway against the fakes, in another terminal:\n`);
console.log(`  FAKE_KEY=${key} UPSTREAMS=${file} npm start\n`);
console.log("Image and video jobs then run on the real protocols (imgB on fal, failing over to bfl; imgC on openai),");
console.log("alpha audio on elevenlabs (failing over to its backup), beta audio on minimax, transcription and");
console.log("understanding on openai audio; chat stays on the simulator. Ctrl-C prints how many requests each fake received.");

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.log(`\nrequests received: fal ${fal.requests.length} (${fal.submits().length} submits), bfl ${bfl.requests.length} (${bfl.submits().length} submits), openai ${openai.requests.length} (${openai.submits().length} submits)`);
  console.log(`elevenlabs ${elevenlabs.requests.length}, elevenlabs backup ${elevenlabsBackup.requests.length}, minimax ${minimax.requests.length}, openai audio ${openaiAudio.requests.length}`);
  await Promise.all([fal.close(), bfl.close(), openai.close(), elevenlabs.close(), elevenlabsBackup.close(), minimax.close(), openaiAudio.close()]);
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
