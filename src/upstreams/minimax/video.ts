/**
 * MiniMax's video task protocol (Hailuo-02), and nothing else: submit, query, retrieve the file. Each
 * function makes exactly one HTTP call; retries are the runner's business (D27).
 *
 * | call | request | answer |
 * |---|---|---|
 * | submit | `POST /v1/video_generation` `{model, prompt, duration, resolution, first_frame_image?}` | `{task_id, base_resp}` |
 * | query | `GET /v1/query/video_generation?task_id=` | `{task_id, status, file_id?, video_width?, video_height?, base_resp}` |
 * | retrieve | `GET /v1/files/retrieve?file_id=` | `{file: {file_id, bytes, created_at, filename, purpose, download_url}, base_resp}` |
 * Sources: MiniMax-AI/MiniMax-MCP `minimax_mcp/server.py` `generate_video` and `query_video_generation`
 * (the three calls, `status` `Fail`/`Success`, `file_id`, `file.download_url`), MiniMax-AI/cli
 * `src/types/api.ts` (`VideoResponse`, `VideoTaskResponse`, `FileRetrieveResponse`) and its fixtures
 * `test/fixtures/video-task-*.json` (ids as strings of digits). Statuses: `Preparing`, `Queueing`,
 * `Processing`, `Success`, `Fail` (the CLI's types also name `Failed` and `Unknown`).
 * Ids are int64: read exactly from the answer's text (api.ts `parseJsonExact`).
 */
import { httpUrlOrNull } from "../keyed-http.ts";
import type { MiniMaxApi } from "./api.ts";
import { baseRespOf, CONTENT_CODES, parseJsonExact } from "./api.ts";

/** The fields of `POST /v1/video_generation`. */
export interface VideoSubmitBody {
  model: string;
  prompt: string;
  duration: number;
  resolution: string;
  first_frame_image?: string;
}

/** A query answer, decoded. */
export type MiniMaxTaskStatus =
  | { status: "queued" }
  | { status: "running" }
  | { status: "success"; fileId: string }
  | { status: "failed"; contentRejected: boolean; retryable: boolean; message: string };

/** The ids MiniMax writes as int64 numbers. */
const ID_KEYS = ["task_id", "file_id"];

/**
 * Submits a task; resolves with MiniMax's `task_id`. Throws api.ts `MiniMaxError` (`modelNotFound`
 * naming `body.model` when MiniMax answers 2013 naming it, D35).
 */
export async function submitVideoTask(api: MiniMaxApi, body: VideoSubmitBody, signal?: AbortSignal): Promise<string> {
  const what = "video_generation";
  const answer = await api.send("POST", api.url("/v1/video_generation"), body, signal);
  const json = api.checked(answer.status, parseJsonExact(answer.text, ID_KEYS), answer.text, { what, model: body.model });
  if (typeof json.task_id !== "string" || json.task_id === "") throw api.malformed(what, "no task_id");
  return json.task_id;
}

/**
 * Reads a task's state. `Fail` (or a content code in `base_resp`) is a state, not a throw: content
 * codes and texts are `contentRejected`, parameter refusals (2013, `invalid params`) not retryable, any
 * other failure retryable (MiniMax's infrastructure). Other failures of the call throw (api.ts table);
 * an unknown status throws a retryable malformed error.
 */
export async function queryVideoTask(api: MiniMaxApi, taskId: string, signal?: AbortSignal): Promise<MiniMaxTaskStatus> {
  const what = "query/video_generation";
  const answer = await api.send("GET", api.url("/v1/query/video_generation", { task_id: taskId }), undefined, signal);
  if (answer.status < 200 || answer.status > 299) throw api.httpError(answer.status, answer.json, answer.text, { what });
  const json = parseJsonExact(answer.text, ID_KEYS);
  const base = baseRespOf(json);
  const status = typeof json === "object" && json !== null && "status" in json ? (json as { status: unknown }).status : undefined;
  if (status === "Fail" || status === "Failed" || (base !== null && CONTENT_CODES.has(base.code))) {
    return failedState(base?.code ?? 0, base?.message ?? "", json);
  }
  const checked = api.checked(answer.status, json, answer.text, { what });
  switch (checked.status) {
    case "Preparing":
    case "Queueing":
      return { status: "queued" };
    case "Processing":
      return { status: "running" };
    case "Success": {
      if (typeof checked.file_id !== "string" || checked.file_id === "") throw api.malformed(what, "Success without file_id");
      return { status: "success", fileId: checked.file_id };
    }
    default:
      throw api.malformed(what, `unknown status ${JSON.stringify(String(checked.status).slice(0, 40))}`);
  }
}

/** The download URL of a file (`file.download_url`). Throws api.ts `MiniMaxError`. */
export async function retrieveFileUrl(api: MiniMaxApi, fileId: string, signal?: AbortSignal): Promise<string> {
  const what = "files/retrieve";
  const json = await api.getJson("/v1/files/retrieve", { file_id: fileId }, { what }, signal, ID_KEYS);
  const file = json.file;
  const url = typeof file === "object" && file !== null ? httpUrlOrNull((file as { download_url?: unknown }).download_url) : null;
  if (url === null) throw api.malformed(what, "no http(s) file.download_url");
  return url;
}

/** The failed state of a `Fail` answer (see {@link queryVideoTask}). */
function failedState(code: number, statusMsg: string, json: unknown): MiniMaxTaskStatus {
  const extra = typeof json === "object" && json !== null ? (json as Record<string, unknown>) : {};
  const texts = [statusMsg, extra.error_message, extra.message].filter((t): t is string => typeof t === "string" && t.trim() !== "");
  const text = texts.join("; ").replace(/\s+/g, " ").trim().slice(0, 300);
  const contentRejected = CONTENT_CODES.has(code) || /sensitive|content|moderat|policy/i.test(text);
  const refused = code === 2013 || /invalid param|parameter/i.test(text);
  const label = code === 0 ? "" : ` (${code})`;
  return {
    status: "failed",
    contentRejected,
    retryable: !contentRejected && !refused,
    message: `the task failed at MiniMax${label}${text === "" ? "" : `: ${text}`}`,
  };
}
