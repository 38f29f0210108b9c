/**
 * The account's stored outputs (D8: `GET /v1/gallery`, newest first, cursor-paged by `job_id`): succeeded
 * images and videos and audio kept with `save_to_blob`. Each card previews its outputs by type (`<img>`
 * with alt text, `<video controls>`, `<audio controls>`), links a download per output, and gives the public
 * share page (`/share/{job_id}`) with a copy button. The API has no type filter, so neither has this page.
 */
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, type paths, unwrap } from "../api.ts";
import { CursorPager } from "../components/DataTable.tsx";
import { OutputList, ShareLink } from "../components/MediaPreview.tsx";
import { QueryView } from "../components/states.tsx";
import { useCursor } from "../components/url-state.ts";
import { DateTime, Usd } from "../components/values.tsx";
import type { PageMeta } from "../pages.ts";

export const page: PageMeta = { path: "/gallery", title: "Gallery", group: "customer", order: 35 };

type Item = paths["/v1/gallery"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

const PAGE_SIZE = "12";

function GalleryItem({ item }: { item: Item }) {
  const subject = `${item.model} ${item.kind} of ${item.job_id}`;
  const titleId = `gallery-${item.job_id}`;
  return (
    <article aria-labelledby={titleId}>
      <h2 id={titleId}>
        {item.model} <small>· {item.kind}</small>
      </h2>
      <OutputList urls={item.urls.length > 0 ? item.urls : [item.url]} contentType={item.content_type} subject={subject} />
      <p>
        <small>
          <DateTime iso={item.created_at} />
          {item.duration_sec !== null && <> · {item.duration_sec} s</>}
          {item.cost_usd !== null && (
            <>
              {" "}
              · <Usd amount={item.cost_usd} />
            </>
          )}{" "}
          ·{" "}
          <Link to={`/jobs/${encodeURIComponent(item.job_id)}`} aria-label={`Details of ${item.job_id}`}>
            job details
          </Link>
        </small>
      </p>
      <ShareLink jobId={item.job_id} url={item.share_url} />
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
      <p>Your finished images and videos, and the audio you kept with <code>save_to_blob</code>. Share links open a public page: anyone with the link can see the output.</p>
      <QueryView
        query={gallery}
        isEmpty={(d) => d.data.length === 0 && !cursor.hasPrevious}
        empty="Nothing in the gallery yet. Finished image and video jobs appear here."
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
