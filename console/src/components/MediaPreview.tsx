/**
 * Previews of stored outputs by their MIME type (an image with its alt text, a video or audio player with
 * controls), each with a download link, and the public share link of a job (`/share/{job_id}`, D8) with a
 * copy button. The output URLs are the gateway's permanent public file URLs (`/v1/files/...`).
 */
import "./jobs-media.css";
import { useEffect, useId, useRef, useState } from "react";
import { CopyButton } from "./CopyButton.tsx";

/** The file name a download suggests: the URL's last path segment (`<job>-0.png`). */
function fileName(url: string): string {
  try {
    return decodeURIComponent(new URL(url, window.location.href).pathname.split("/").pop() ?? "") || "output";
  } catch {
    return "output";
  }
}

/** One output rendered as its type allows: `<img>`, `<video controls>`, `<audio controls>`, or a link only. */
export function MediaPreview({ url, contentType, description }: { url: string; contentType: string; description: string }) {
  if (contentType.startsWith("image/")) return <img className="media-preview" src={url} alt={description} loading="lazy" />;
  // preload=metadata: the length shows without downloading a whole video for a list of previews.
  if (contentType.startsWith("video/"))
    return <video className="media-preview" src={url} controls preload="metadata" aria-label={description} />;
  if (contentType.startsWith("audio/")) return <audio className="media-preview-audio" src={url} controls preload="metadata" aria-label={description} />;
  return <p>No preview for {contentType}.</p>;
}

/**
 * Every output of a job (several images when `n` > 1): preview and a download link each. `subject` names
 * the job in alt texts and link names ("imgA-v4 image of job_…").
 */
export function OutputList({ urls, contentType, subject }: { urls: string[]; contentType: string; subject: string }) {
  return (
    <ul className="outputs">
      {urls.map((url, i) => {
        const which = urls.length > 1 ? ` (${i + 1} of ${urls.length})` : "";
        return (
          <li key={url}>
            <MediaPreview url={url} contentType={contentType} description={`${subject}${which}`} />
            <a href={url} download={fileName(url)} aria-label={`Download ${subject}${which}`}>
              Download{which}
            </a>
          </li>
        );
      })}
    </ul>
  );
}

/** The public share page of a succeeded job in a read-only labelled field, with copy and open buttons. */
export function ShareLink({ jobId, url }: { jobId: string; url: string }) {
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  return (
    <div className="share-link">
      <label htmlFor={id}>
        Share link<span className="visually-hidden"> of {jobId}</span>
      </label>
      <div role="group" className="secret-row">
        <input id={id} ref={field} type="url" readOnly value={url} onFocus={(e) => e.currentTarget.select()} />
        <CopyButton text={url} label="Copy" ariaLabel={`Copy the share link of ${jobId}`} fallback={() => field.current} />
      </div>
      <small>
        Anyone with this link sees the output on a public page.{" "}
        <a href={url} target="_blank" rel="noopener">
          Open the share page
        </a>
      </small>
    </div>
  );
}

/**
 * One share action for a card of a list (the gallery): a "Share" button opening a small panel with the
 * public link (a read-only labelled field), a copy button and a link to open the page; Escape, a click
 * outside or the button again closes it. Where one job is shown (its detail page) use {@link ShareLink}.
 */
export function ShareMenu({ jobId, url }: { jobId: string; url: string }) {
  const [open, setOpen] = useState(false);
  const panelId = useId();
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") setOpen(false);
    };
    const onClick = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    window.addEventListener("mousedown", onClick);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("mousedown", onClick);
    };
  }, [open]);
  return (
    <div className="share-menu" ref={box}>
      <button
        type="button"
        className="secondary outline small"
        aria-expanded={open}
        aria-controls={panelId}
        aria-label={`Share ${jobId}`}
        onClick={() => setOpen((o) => !o)}
      >
        Share
      </button>
      {open && (
        <div id={panelId} className="share-panel">
          <ShareLink jobId={jobId} url={url} />
        </div>
      )}
    </div>
  );
}

/** The share page URL of job `jobId` on this gateway (the gallery gives it as `share_url`). */
export function shareUrlOf(jobId: string): string {
  return `${window.location.origin}/share/${encodeURIComponent(jobId)}`;
}
