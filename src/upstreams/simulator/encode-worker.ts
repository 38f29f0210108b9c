/**
 * `worker_threads` entry of the simulator's speech encoder: renders long clips off the event loop.
 * It also renders music and sound effects ({@link MediaWorkerRequest}, used by `media.ts`) and simulated
 * videos ({@link VideoWorkerRequest}, used by `visual.ts`).
 *
 * Protocol (one job at a time per worker): the parent posts a {@link EncodeWorkerRequest}; the worker
 * answers with zero or more `chunk` messages (encoded bytes, in order, their buffers transferred), then
 * exactly one `done` (with the clip duration in seconds) or `error` message.
 */

import { parentPort } from "node:worker_threads";
import { renderSpeechChunks, type SpeechRenderJob } from "./speech/render.ts";
import { type MediaRenderJob, renderMediaChunks } from "./media-render.ts";
import { type RenderVideoOptions, renderMp4 } from "./video.ts";

/** Parent -> worker: render `job`; answers carry the same `id`. */
export interface EncodeWorkerRequest {
  id: number;
  job: SpeechRenderJob;
}

/** Parent -> worker: render the music or sound-effect `media` job (same answers as speech jobs). */
export interface MediaWorkerRequest {
  id: number;
  media: MediaRenderJob;
}

/** Parent -> worker: render the simulated video `video` (one `chunk`, the MP4 file, then `done`). */
export interface VideoWorkerRequest {
  id: number;
  video: RenderVideoOptions;
}

/** Worker -> parent messages. */
export type EncodeWorkerMessage =
  | { id: number; type: "chunk"; bytes: Uint8Array }
  | { id: number; type: "done"; durationSec: number }
  | { id: number; type: "error"; message: string };

if (parentPort) {
  const port = parentPort;
  port.on("message", (req: EncodeWorkerRequest | MediaWorkerRequest | VideoWorkerRequest) => {
    if ("video" in req) {
      renderMp4(req.video).then(
        (v) => {
          const bytes = v.body.byteOffset === 0 && v.body.byteLength === v.body.buffer.byteLength ? v.body : v.body.slice();
          port.postMessage({ id: req.id, type: "chunk", bytes } satisfies EncodeWorkerMessage, [bytes.buffer as ArrayBuffer]);
          port.postMessage({ id: req.id, type: "done", durationSec: v.durationSec } satisfies EncodeWorkerMessage);
        },
        (err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          port.postMessage({ id: req.id, type: "error", message } satisfies EncodeWorkerMessage);
        },
      );
      return;
    }
    try {
      const { durationSec, chunks } =
        "media" in req ? renderMediaChunks(req.media) : renderSpeechChunks(req.job);
      for (const chunk of chunks) {
        // Own the buffer exactly so it can be transferred instead of copied.
        const bytes =
          chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength ? chunk : chunk.slice();
        const msg: EncodeWorkerMessage = { id: req.id, type: "chunk", bytes };
        port.postMessage(msg, [bytes.buffer as ArrayBuffer]);
      }
      const done: EncodeWorkerMessage = { id: req.id, type: "done", durationSec };
      port.postMessage(done);
    } catch (err) {
      const msg: EncodeWorkerMessage = {
        id: req.id,
        type: "error",
        message: err instanceof Error ? err.message : String(err),
      };
      port.postMessage(msg);
    }
  });
}
