/**
 * A reader of `text/event-stream` bodies (the job events of D30, `GET /v1/jobs/{id}/events`) from a fetch
 * `ReadableStream`. Browser-safe (no Node modules): the web console follows jobs with it, because
 * `EventSource` cannot send the `Authorization` header. Re-exported by jobs.ts and index.ts.
 */

/** One server-sent event: its `event` name (`message` when none was given), `data` and `id`. */
export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | null;
}

/**
 * The events of a `text/event-stream` body, parsed as the HTML standard's "event stream interpretation"
 * has it: lines end in CRLF, LF or CR; a blank line dispatches the event; `data` lines are joined with
 * LF; comment lines (`:`) and unknown fields are ignored; an event without data is not dispatched.
 */
export async function* sseEvents(stream: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  let event = "";
  let id: string | null = null;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // A trailing CR may be the first half of a CRLF split across chunks: keep it for the next read.
      for (;;) {
        const m = /\r\n|\n|\r(?!$)/.exec(buffer);
        if (!m && !(done && buffer.endsWith("\r"))) break;
        const end = m ? m.index : buffer.length - 1;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (m ? m[0].length : 1));
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n"), id };
          data = [];
          event = "";
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id" && !value.includes("\0")) id = value;
      }
      // The standard drops an event that the stream ends in the middle of.
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
