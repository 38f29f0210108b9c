/**
 * Copy to the clipboard, and the once-shown secret (an API key, later a webhook secret): the secret in a
 * read-only labelled field, a copy button and the warning that it will not be shown again.
 */
import { useId, useRef, useState } from "react";

/**
 * A button copying `text`. The Clipboard API needs a secure context (HTTPS or localhost); elsewhere, or when
 * the browser refuses, `fallback` (the field holding the text) is selected so the user can press Ctrl+C.
 */
export function CopyButton({
  text,
  label = "Copy",
  ariaLabel,
  fallback,
}: {
  text: string;
  label?: string;
  /** The button's accessible name when `label` repeats on the page ("Copy the share link of job_…"). */
  ariaLabel?: string;
  fallback?: () => HTMLInputElement | null;
}) {
  const [state, setState] = useState<"idle" | "copied" | "manual">("idle");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      fallback?.()?.select();
      setState("manual");
    }
  };
  return (
    <>
      <button type="button" className="secondary" aria-label={ariaLabel} onClick={() => void copy()}>
        {state === "copied" ? "Copied" : label}
      </button>
      <span role="status" className="visually-hidden-when-empty">
        {state === "copied" ? "Copied to the clipboard." : state === "manual" ? "Press Ctrl+C (⌘C) to copy the selected text." : ""}
      </span>
    </>
  );
}

/** A secret shown once: labelled read-only field, copy button, warning. */
export function SecretReveal({ label, secret, children }: { label: string; secret: string; children?: React.ReactNode }) {
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  return (
    <article className="secret" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{label}</h2>
      <p role="note" className="warning">
        Copy it now and keep it somewhere safe: it is shown only once. The gateway keeps only a hash and cannot show it again.
      </p>
      <label htmlFor={id}>{label}</label>
      <div role="group" className="secret-row">
        <input id={id} ref={field} type="text" readOnly value={secret} spellCheck={false} autoComplete="off" onFocus={(e) => e.currentTarget.select()} />
        <CopyButton text={secret} fallback={() => field.current} />
      </div>
      {children}
    </article>
  );
}
