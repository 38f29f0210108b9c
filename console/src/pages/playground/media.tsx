/**
 * Playground: an image or video job (spec "POST /v1/images/generations", "POST /v1/videos/generations",
 * D30). The form offers what the catalog allows for the model (sizes, count, quality tiers, durations from
 * `GET /v1/pricing`); the job is followed to its end with its status, queue position and progress, then
 * the image or video is shown with a link to the job.
 */
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useEffect, useRef, useState } from "react";
import { Link } from "react-router";
import { Usd } from "../../components/values.tsx";
import type { PageMeta } from "../../pages.ts";
import { BREAK_ANYWHERE, CallError, type MediaPriceRow, ModelSelect, PlaygroundShell, PriceLine, usePricing, visibleLength } from "../playground.tsx";
import { followJob, type ImageBody, type MediaJob, submitImage, submitVideo, TERMINAL, type VideoBody } from "./calls.ts";
import type { PlaygroundKey } from "./key.ts";

export const page: PageMeta = { path: "/playground/media", title: "Playground: image and video", group: "customer", order: 42, nav: false };

const PROMPT_MAX = 4000;
/** Sizes the image endpoint maps to (spec "POST /v1/images/generations"). */
const SIZES = ["auto", "1:1", "16:9", "9:16", "4:3", "3:4", "21:9"];
/** Models that take a source image: required by some (spec), optional for others. */
const IMAGE_URL_REQUIRED = new Set(["imgB-edit-pro", "vidC-02-512p"]);
const IMAGE_URL_OPTIONAL = new Set(["imgB-2-pro"]);

/** The durations a video model allows, from its catalog row: a list, or a range (default 1 to 10). */
function durationsOf(row: MediaPriceRow | undefined): { allowed: number[] | null; min: number; max: number } {
  if (row?.id.startsWith("vidC-")) return { allowed: [6, 10], min: 6, max: 10 };
  const d = (row?.detail ?? {}) as { allowed_durations?: number[] | null; min_duration_sec?: number; max_duration_sec?: number };
  return { allowed: d.allowed_durations ?? null, min: d.min_duration_sec ?? 1, max: d.max_duration_sec ?? 10 };
}

const STATUS_TEXT: Record<MediaJob["status"], string> = {
  pending: "Waiting to start",
  processing: "Generating",
  succeeded: "Done",
  failed: "Failed: nothing was charged",
  refunded: "Refunded: the hold was released",
  expired: "Expired",
};

/** The state of a followed job: status, queue position, a progress bar; the output once done. */
function JobView({ job, prompt }: { job: MediaJob; prompt: string }) {
  const done = TERMINAL.includes(job.status);
  return (
    <article aria-labelledby="pg-job-title">
      <h2 id="pg-job-title">{job.kind === "video" ? "Video" : "Image"} job</h2>
      <p>
        <small>
          Job id <code style={BREAK_ANYWHERE}>{job.id}</code>
        </small>
      </p>
      <p role="status">
        <span className={`status status-${job.status}`}>{STATUS_TEXT[job.status]}</span>
        {job.status === "pending" && job.queue_position !== null && ` · number ${job.queue_position} in your queue`}
        {job.status === "processing" && job.progress !== null && ` · ${Math.round(job.progress * 100)}%`}
      </p>
      {!done && <progress aria-label="Job progress" {...(job.status === "processing" && job.progress !== null ? { value: job.progress, max: 1 } : {})} />}
      {job.error && (
        <p className="notice error">
          {job.error.message} <small>({job.error.code})</small>
        </p>
      )}
      {job.output &&
        job.output.urls.map((url, i) =>
          job.output!.content_type.startsWith("video/") ? (
            <video key={url} controls src={url} aria-label={`Generated video: ${prompt}`} style={{ width: "100%" }} />
          ) : (
            <img key={url} src={url} alt={`Generated image ${job.output!.urls.length > 1 ? `${i + 1} ` : ""}for “${prompt}”`} style={{ maxWidth: "100%", height: "auto" }} />
          ),
        )}
      {job.mode === "test" ? (
        <dl className="limits">
          <dt>Priced at</dt>
          <dd>
            <Usd amount={job.cost_usd ?? job.hold_usd} />
          </dd>
          <dt>Money moved</dt>
          <dd className="mode-test">none (test key)</dd>
        </dl>
      ) : (
        <dl className="limits">
          <dt>Held</dt>
          <dd>
            <Usd amount={job.hold_usd} />
          </dd>
          <dt>Charged</dt>
          <dd>{job.cost_usd === null ? (done ? "nothing" : "on success") : <Usd amount={job.cost_usd} />}</dd>
        </dl>
      )}
      <p>
        <Link to={`/jobs/${job.id}`}>See the job</Link>
        {job.output && (
          <>
            {" · "}
            <a href={job.output.url} download>
              Download the {job.kind}
            </a>
          </>
        )}
      </p>
    </article>
  );
}

function MediaTool({ pgKey }: { pgKey: PlaygroundKey }) {
  const [kind, setKind] = useState<"image" | "video">("image");
  const [models, setModels] = useState({ image: "", video: "" });
  const model = models[kind];
  const setModel = (id: string) => setModels((m) => (m[kind] === id ? m : { ...m, [kind]: id }));
  const [prompt, setPrompt] = useState("");
  const [size, setSize] = useState("auto");
  const [n, setN] = useState("1");
  const [quality, setQuality] = useState<"low" | "medium" | "high">("medium");
  const [duration, setDuration] = useState("5");
  const [imageUrl, setImageUrl] = useState("");
  const [job, setJob] = useState<MediaJob | null>(null);
  const [submittedPrompt, setSubmittedPrompt] = useState("");
  const pricing = usePricing();
  const row = pricing.data?.media.find((m) => m.id === model);
  const durations = durationsOf(row);
  const abort = useRef<AbortController | null>(null);
  useEffect(() => () => abort.current?.abort(), []);

  const run = useMutation({
    mutationFn: async () => {
      abort.current?.abort();
      const controller = new AbortController();
      abort.current = controller;
      setJob(null);
      setSubmittedPrompt(prompt);
      const source = imageUrl.trim() ? { image_url: imageUrl.trim() } : {};
      let submitted: MediaJob;
      if (kind === "image") {
        const body: ImageBody = { model: model as ImageBody["model"], prompt, size, ...source };
        if (model !== "imgB-2-pro") body.n = Number(n);
        if (row?.pricing_mode === "per-quality") body.quality = quality;
        submitted = await submitImage(pgKey, body);
      } else {
        submitted = await submitVideo(pgKey, { model: model as VideoBody["model"], prompt, duration: Number(duration), ...source });
      }
      setJob(submitted);
      return followJob(pgKey, submitted, setJob, controller.signal);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run.mutate();
  };
  const length = visibleLength(prompt);
  const needsImage = IMAGE_URL_REQUIRED.has(model);
  const takesImage = needsImage || IMAGE_URL_OPTIONAL.has(model) || kind === "video";
  const durationOk = durations.allowed ? durations.allowed.includes(Number(duration)) : Number(duration) >= durations.min && Number(duration) <= durations.max;

  return (
    <section aria-labelledby="pg-media-title">
      <h2 id="pg-media-title">Submit a job</h2>
      <form onSubmit={submit}>
        <fieldset>
          <legend>Kind</legend>
          <label>
            <input type="radio" name="pg-media-kind" checked={kind === "image"} onChange={() => setKind("image")} />
            Image
          </label>
          <label>
            <input type="radio" name="pg-media-kind" checked={kind === "video"} onChange={() => setKind("video")} />
            Video
          </label>
        </fieldset>
        <ModelSelect key={kind} capability={kind} value={model} onChange={setModel} label={kind === "image" ? "Image model" : "Video model"} />
        {model && <PriceLine id={model} />}
        <label htmlFor="pg-media-prompt">Prompt</label>
        <textarea id="pg-media-prompt" rows={3} required value={prompt} placeholder="a lighthouse at dusk, oil painting" aria-describedby="pg-media-count" onChange={(e) => setPrompt(e.target.value)} />
        <small id="pg-media-count" aria-live="polite">
          {length.toLocaleString()} / {PROMPT_MAX.toLocaleString()} characters{length > PROMPT_MAX ? ": too long" : ""}
        </small>
        {kind === "image" ? (
          <div className="grid">
            <div>
              <label htmlFor="pg-media-size">Size</label>
              <select id="pg-media-size" value={size} onChange={(e) => setSize(e.target.value)}>
                {SIZES.map((s) => (
                  <option key={s} value={s}>
                    {s === "auto" ? "auto (the model's default)" : s}
                  </option>
                ))}
              </select>
            </div>
            {model !== "imgB-2-pro" && (
              <div>
                <label htmlFor="pg-media-n">Number of images (1 to 4, each billed)</label>
                <input id="pg-media-n" type="number" min={1} max={4} step={1} value={n} onChange={(e) => setN(e.target.value)} />
              </div>
            )}
            {row?.pricing_mode === "per-quality" && (
              <div>
                <label htmlFor="pg-media-quality">Quality</label>
                <select id="pg-media-quality" value={quality} onChange={(e) => setQuality(e.target.value as typeof quality)}>
                  <option value="low">low</option>
                  <option value="medium">medium</option>
                  <option value="high">high</option>
                </select>
              </div>
            )}
          </div>
        ) : durations.allowed ? (
          <div>
            <label htmlFor="pg-media-duration">Duration (seconds)</label>
            <select id="pg-media-duration" value={duration} onChange={(e) => setDuration(e.target.value)}>
              {durations.allowed.map((d) => (
                <option key={d} value={d}>
                  {d}
                </option>
              ))}
            </select>
          </div>
        ) : (
          <div>
            <label htmlFor="pg-media-duration">
              Duration (seconds, {durations.min} to {durations.max})
            </label>
            <input id="pg-media-duration" type="number" min={durations.min} max={durations.max} step={1} value={duration} onChange={(e) => setDuration(e.target.value)} />
          </div>
        )}
        {takesImage && (
          <>
            <label htmlFor="pg-media-image-url">{kind === "video" ? "First frame image URL" : "Source image URL"} (HTTPS{needsImage ? ", required" : ", optional"})</label>
            <input id="pg-media-image-url" type="url" required={needsImage} value={imageUrl} placeholder="https://…" onChange={(e) => setImageUrl(e.target.value)} />
          </>
        )}
        {kind === "video" && <small>Video needs tier 1 or higher (a first deposit).</small>}
        {run.isError &&
          (run.error instanceof DOMException && run.error.name === "AbortError" ? (
            <p role="status">Stopped following the job; it goes on, and the job's page shows how it ends.</p>
          ) : (
            <CallError error={run.error} />
          ))}
        <button
          type="submit"
          aria-busy={run.isPending}
          disabled={run.isPending || !model || prompt.trim() === "" || length > PROMPT_MAX || (kind === "video" && !durationOk)}
        >
          Submit the {kind} job
        </button>
        {run.isPending && job && (
          <button type="button" className="secondary outline" onClick={() => abort.current?.abort()}>
            Stop following
          </button>
        )}
      </form>
      {job && <JobView job={job} prompt={submittedPrompt} />}
    </section>
  );
}

export default function MediaPlayground() {
  return <PlaygroundShell>{(key) => <MediaTool pgKey={key} />}</PlaygroundShell>;
}
