/**
 * Playground: chat. A conversation with a text model over `POST /v1/chat/completions` with `stream: true`:
 * the answer grows as its server-sent chunks arrive (read with fetch, calls.ts), then its token usage and
 * its cost (from the call's usage record, `GET /v1/requests/{id}`, since a stream carries no cost header).
 * The conversation lives in the page only; nothing is stored.
 */
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useEffect, useRef, useState } from "react";
import { Usd } from "../../components/values.tsx";
import { formatCount } from "../../format.ts";
import type { PageMeta } from "../../pages.ts";
import { BREAK_ANYWHERE, CallError, ModelSelect, PlaygroundShell } from "../playground.tsx";
import { type ChatMessage, type ChatOutcome, costOf, streamChat } from "./calls.ts";
import type { PlaygroundKey } from "./key.ts";

export const page: PageMeta = { path: "/playground/chat", title: "Playground: chat", group: "customer", order: 43, nav: false };

interface Turn extends ChatMessage {
  id: number;
}

function ChatTool({ pgKey }: { pgKey: PlaygroundKey }) {
  const [model, setModel] = useState("");
  const [draft, setDraft] = useState("");
  const [turns, setTurns] = useState<Turn[]>([]);
  const [outcome, setOutcome] = useState<(ChatOutcome & { costUsd: number | null }) | null>(null);
  const abort = useRef<AbortController | null>(null);
  const nextId = useRef(0);
  useEffect(() => () => abort.current?.abort(), []);

  const send = useMutation({
    mutationFn: async (text: string) => {
      const controller = new AbortController();
      abort.current = controller;
      const history: ChatMessage[] = [...turns.map(({ role, content }) => ({ role, content })), { role: "user", content: text }];
      const questionId = ++nextId.current;
      const answerId = ++nextId.current;
      setTurns((t) => [...t, { id: questionId, role: "user", content: text }, { id: answerId, role: "assistant", content: "" }]);
      setOutcome(null);
      const done = await streamChat(
        pgKey,
        model,
        history,
        (delta) => setTurns((t) => t.map((turn) => (turn.id === answerId ? { ...turn, content: turn.content + delta } : turn))),
        controller.signal,
      );
      setOutcome({ ...done, costUsd: null });
      const costUsd = done.requestId ? await costOf(done.requestId).catch(() => null) : null;
      setOutcome({ ...done, costUsd });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const text = draft.trim();
    if (!text) return;
    setDraft("");
    send.mutate(text);
  };
  const aborted = send.error instanceof DOMException && send.error.name === "AbortError";

  return (
    <section aria-labelledby="pg-chat-title">
      <h2 id="pg-chat-title">Conversation</h2>
      <ModelSelect capability="chat" value={model} onChange={setModel} label="Chat model" />
      <div role="log" aria-label="Conversation" aria-live="polite" aria-busy={send.isPending}>
        {turns.length === 0 && <p className="empty">No messages yet. Write one below.</p>}
        {turns.map((t) => (
          <article key={t.id} aria-label={t.role === "user" ? "You" : "Assistant"}>
            <strong>{t.role === "user" ? "You" : "Assistant"}</strong>
            <p style={{ whiteSpace: "pre-wrap", marginBottom: 0 }}>{t.content || (send.isPending ? "…" : "")}</p>
          </article>
        ))}
      </div>
      {outcome && (
        <dl className="limits" aria-label="Last answer" style={{ marginBlock: "1rem" }}>
          <dt>Model</dt>
          <dd>{outcome.model ?? "—"}</dd>
          {outcome.usage && (
            <>
              <dt>Tokens in / out</dt>
              <dd>
                {formatCount(outcome.usage.prompt_tokens)} / {formatCount(outcome.usage.completion_tokens)}
              </dd>
            </>
          )}
          <dt>Cost</dt>
          <dd>
            <Usd amount={outcome.costUsd} />
            {pgKey.mode === "test" && " (test key: no money moved)"}
          </dd>
          <dt>Request id</dt>
          <dd>
            <code style={BREAK_ANYWHERE}>{outcome.requestId ?? "—"}</code>
          </dd>
        </dl>
      )}
      {send.isError && (aborted ? <p role="status">Stopped. The part received so far is kept above.</p> : <CallError error={send.error} />)}
      <form onSubmit={submit}>
        <label htmlFor="pg-chat-message">Message</label>
        <textarea
          id="pg-chat-message"
          rows={3}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            // Enter sends, Shift+Enter makes a new line (as in most chat boxes).
            if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <small>Enter sends; Shift+Enter starts a new line.</small>
        <div role="group">
          <button type="submit" aria-busy={send.isPending} disabled={send.isPending || !model || draft.trim() === ""}>
            Send
          </button>
          {send.isPending ? (
            <button type="button" className="secondary outline" onClick={() => abort.current?.abort()}>
              Stop
            </button>
          ) : (
            <button type="button" className="secondary outline" disabled={turns.length === 0} onClick={() => (setTurns([]), setOutcome(null), send.reset())}>
              Clear the conversation
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

export default function ChatPlayground() {
  return <PlaygroundShell>{(key) => <ChatTool pgKey={key} />}</PlaygroundShell>;
}
