/**
 * A first API call to copy: `curl` on this gateway's own address (`window.location.origin`, the console
 * is served by the gateway it manages) with a placeholder for the user's key, for the empty states of
 * the pages a first call fills (overview, jobs, gallery, usage).
 */
import { useId, useRef } from "react";
import { CopyButton } from "./CopyButton.tsx";

/** What the first call makes: an image job (jobs, gallery) or any call (usage). */
export type FirstCallKind = "image" | "chat";

/** The shell lines of the first call of `kind` on `origin`, the key left as `$GATEWAY_API_KEY`. */
export function firstCallText(kind: FirstCallKind, origin: string): string {
  const head = [`export GATEWAY_URL=${origin}`, "export GATEWAY_API_KEY=gw_...   # a key from the Keys page", ""];
  if (kind === "chat")
    return [
      ...head,
      'curl "$GATEWAY_URL/v1/chat/completions" \\',
      '  -H "Authorization: Bearer $GATEWAY_API_KEY" -H "Content-Type: application/json" \\',
      `  -d '{"model":"txtA-small","messages":[{"role":"user","content":"Say hello"}]}'`,
    ].join("\n");
  return [
    ...head,
    'curl "$GATEWAY_URL/v1/images/generations" \\',
    '  -H "Authorization: Bearer $GATEWAY_API_KEY" -H "Content-Type: application/json" \\',
    `  -d '{"model":"imgA-v4","prompt":"a lighthouse at dawn"}'`,
  ].join("\n");
}

/** The first call as a copyable code block, with the sentence saying where the key comes from. */
export function FirstCall({ kind = "image" }: { kind?: FirstCallKind }) {
  const text = firstCallText(kind, window.location.origin);
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  return (
    <div className="first-call">
      <div className="first-call-head">
        <small id={id}>Or from a terminal, with one of your keys (a test key moves no money):</small>
        <CopyButton text={text} label="Copy" ariaLabel="Copy the example call" fallback={() => field.current} />
      </div>
      <pre aria-labelledby={id}>
        <code>{text}</code>
      </pre>
      {/* The copy fallback selects this hidden copy of the text when the clipboard is refused. */}
      <input ref={field} className="visually-hidden" tabIndex={-1} aria-hidden="true" readOnly value={text} />
    </div>
  );
}
