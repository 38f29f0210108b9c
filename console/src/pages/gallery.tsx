/**
 * The account's stored outputs (D8: `GET /v1/gallery`, newest first, cursor-paged by `job_id`): succeeded
 * images and videos and audio kept with `save_to_blob`. Each card previews its outputs by type (`<img>`
 * with alt text, `<video controls>`, `<audio controls>`), shows the prompt, links a download per output,
 * and has one "Share" action opening the public share page's link (`/share/{job_id}`) with a copy button.
 * A test-mode job says "no money moved" instead of a charge (D32). The API has no type filter, so neither
 * has this page.
 */
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { CursorPager } from "../components/DataTable.tsx";
import { OutputList, ShareMenu } from "../components/MediaPreview.tsx";
import { EmptyState, QueryView } from "../components/states.tsx";
import { FirstCall } from "../components/FirstCall.tsx";
import { useCursor } from "../components/url-state.ts";
import { Charge, DateTime } from "../components/values.tsx";
import type { PageMeta } from "../pages.ts";

export const page: PageMeta = { path: "/gallery", title: "Gallery", group: "customer", order: 35, section: "observe" };

type Item = paths["/v1/gallery"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

const PAGE_SIZE = "12";

function GalleryItem({ item }: { item: Item }) {
  const subject = `${item.model} ${item.kind} of ${item.job_id}`;
  const titleId = `gallery-${item.job_id}`;
  return (
    <article aria-labelledby={titleId} className="gallery-card">
      <OutputList urls={item.urls.length > 0 ? item.urls : [item.url]} contentType={item.content_type} subject={subject} />
      <div className="gallery-body">
        <h2 id={titleId} className="gallery-prompt" title={item.prompt ?? undefined}>
          {item.prompt ?? <span className="muted">{item.kind} without a prompt</span>}
        </h2>
        <p className="gallery-meta">
          <small>
            {item.model} · <DateTime iso={item.created_at} />
            {item.duration_sec !== null && <> · {item.duration_sec} s</>}
            {item.cost_usd !== null && (
              <>
                {" "}
                · <Charge amount={item.cost_usd} mode={item.mode} cents />
              </>
            )}
          </small>
        </p>
        <div className="gallery-actions">
          <Link to={`/jobs/${encodeURIComponent(item.job_id)}`} aria-label={`Details of ${item.job_id}`}>
            Details
          </Link>
          <ShareMenu jobId={item.job_id} url={item.share_url} />
        </div>
      </div>
    </article>
  );
}

export default function Gallery() {
  const cursor = useCursor();
  const query = { limit: PAGE_SIZE, ...(cursor.after ? { after: cursor.after } : {}) };
  const gallery = useQuery({
    queryKey: ["gallery", query],
    queryFn: ({ signal }) => unwrap(api.GET("/v1/gallery", { params: { query }, signal })),
  });
  return (
    <>
      <p className="lead">
        Your finished images and videos, and the audio you kept with <code>save_to_blob</code>. A share link opens a public page: anyone with the link
        sees the output.
      </p>
      <QueryView
        query={gallery}
        isEmpty={(d) => d.data.length === 0 && !cursor.hasPrevious}
        empty={
          <EmptyState
            after={<FirstCall />}
            title="Nothing in the gallery yet."
            actions={
              <Link to="/playground/media" role="button">
                Make an image in the playground
              </Link>
            }
          >
            <p>Finished image and video jobs appear here with their prompts, ready to download or share.</p>
          </EmptyState>
        }
        loadingLabel="Loading the gallery…"
      >
        {(d) => (
          <>
            <div className="gallery">
              {d.data.map((item) => (
                <GalleryItem key={item.job_id} item={item} />
              ))}
            </div>
            <CursorPager cursor={cursor} hasMore={d.has_more} lastId={d.data.at(-1)?.job_id} />
          </>
        )}
      </QueryView>
    </>
  );
}
