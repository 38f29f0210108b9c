/**
 * The public price list (`GET /v1/pricing`, no sign-in): token-priced text models and per-call media
 * models, filtered by modality and by a model name or id, both kept in the URL.
 */
import { useQuery } from "@tanstack/react-query";
import { api, type paths, unwrap } from "../api.ts";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { Empty, QueryView } from "../components/states.tsx";
import { useUrlFilters } from "../components/url-state.ts";
import { Usd } from "../components/values.tsx";
import type { PageMeta } from "../pages.ts";

export const page: PageMeta = { path: "/pricing", title: "Pricing", group: "public", order: 10, section: "reference" };

type Catalog = paths["/v1/pricing"]["get"]["responses"][200]["content"]["application/json"];
type TextRow = Catalog["text"][number];
type MediaRow = Catalog["media"][number];

const MODALITIES = ["text", "image", "video", "audio"] as const;

const TEXT_COLUMNS: Column<TextRow>[] = [
  { header: "Model", cell: (r) => r.name },
  { header: "Id", cell: (r) => <code>{r.id}</code> },
  { header: "Input / 1M tokens", numeric: true, cell: (r) => <Usd amount={r.input_per_1m} /> },
  { header: "Cached input / 1M", numeric: true, cell: (r) => <Usd amount={r.cached_input_per_1m} /> },
  { header: "Output / 1M tokens", numeric: true, cell: (r) => <Usd amount={r.output_per_1m} /> },
];

const MEDIA_COLUMNS: Column<MediaRow>[] = [
  { header: "Model", cell: (r) => r.name },
  { header: "Id", cell: (r) => <code>{r.id}</code> },
  { header: "Modality", cell: (r) => r.modality },
  { header: "Priced", cell: (r) => r.pricing_mode },
  { header: "Typical call", numeric: true, cell: (r) => <Usd amount={r.usd_per_call} /> },
];

export default function Pricing() {
  const catalog = useQuery({ queryKey: ["pricing"], queryFn: () => unwrap(api.GET("/v1/pricing")), staleTime: 5 * 60_000 });
  const [filters, setFilters] = useUrlFilters({ modality: "", model: "" });
  const needle = filters.model.trim().toLowerCase();
  const matches = (r: { id: string; name: string }) => !needle || r.id.toLowerCase().includes(needle) || r.name.toLowerCase().includes(needle);
  return (
    <>
      <p>Prices in USD. Text models are charged per token; the others per call, second, minute, character or image as shown.</p>
      <form className="filters" role="search" aria-label="Filter the price list" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="pricing-modality">Modality</label>
          <select id="pricing-modality" value={filters.modality} onChange={(e) => setFilters({ modality: e.target.value })}>
            <option value="">All</option>
            {MODALITIES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="pricing-model">Model name or id</label>
          <input id="pricing-model" type="search" value={filters.model} onChange={(e) => setFilters({ model: e.target.value })} />
        </div>
      </form>
      <QueryView query={catalog}>
        {(c) => {
          const text = filters.modality === "" || filters.modality === "text" ? c.text.filter(matches) : [];
          const media = c.media.filter((r) => (filters.modality === "" || r.modality === filters.modality) && matches(r));
          return (
            <>
              {text.length === 0 && media.length === 0 && <Empty>No model matches these filters.</Empty>}
              {text.length > 0 && (
                <section aria-labelledby="pricing-text">
                  <h2 id="pricing-text">Text models</h2>
                  <DataTable columns={TEXT_COLUMNS} rows={text} rowKey={(r) => r.id} />
                </section>
              )}
              {media.length > 0 && (
                <section aria-labelledby="pricing-media">
                  <h2 id="pricing-media">Image, video and audio models</h2>
                  <DataTable columns={MEDIA_COLUMNS} rows={media} rowKey={(r) => r.id} />
                </section>
              )}
            </>
          );
        }}
      </QueryView>
    </>
  );
}
