/**
 * Where the realtime sockets live (D42, D43): natively under `/v1/audio/...` and in the ElevenLabs dialect
 * under `/elevenlabs/v1/...` (D36's prefix, its error shape for the refusals before the upgrade). One
 * handler per socket kind serves both paths.
 */
import type { Services } from "../../services.ts";
import { elevenLabsErrorHandler } from "../dialects/elevenlabs/errors.ts";
import type { App } from "../types.ts";
import { speechSocketRoutes } from "./speech.ts";
import type { RealtimeSockets } from "./sockets.ts";
import { transcriptionSocketRoutes } from "./transcription.ts";

/** Registers the native sockets on `app` (the root scope's D1 errors). */
export function realtimeRoutes(app: App, services: Services, sockets: RealtimeSockets): void {
  speechSocketRoutes(app, services, sockets, { path: "/v1/audio/speech/:voice_id", tag: "audio", idPrefix: "speechSocket" });
  transcriptionSocketRoutes(app, services, sockets, { url: "/v1/audio/transcriptions/realtime", tag: "audio", operationId: "transcriptionSocket" });
}

/** Registers the dialect's sockets on `app`, a scope with the `/elevenlabs` prefix (D36: ElevenLabs' error shape). */
export function elevenLabsRealtimeRoutes(app: App, services: Services, sockets: RealtimeSockets): void {
  app.setErrorHandler(elevenLabsErrorHandler);
  speechSocketRoutes(app, services, sockets, { path: "/v1/text-to-speech/:voice_id", tag: "elevenlabs", idPrefix: "elevenLabsSpeechSocket" });
  transcriptionSocketRoutes(app, services, sockets, { url: "/v1/speech-to-text/realtime", tag: "elevenlabs", operationId: "elevenLabsTranscriptionSocket" });
}
