/**
 * The public tier matrix (`GET /v1/limits/tiers`, D9): what each tier allows and the cumulative deposit
 * that reaches it.
 */
import { useQuery } from "@tanstack/react-query";
import { api, type Schemas, unwrap } from "../api.ts";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { QueryView } from "../components/states.tsx";
import { Usd } from "../components/values.tsx";
import { formatCount } from "../format.ts";
import type { PageMeta } from "../pages.ts";
import { tierJobs } from "../tiers.ts";

export const page: PageMeta = { path: "/tiers", title: "Tiers and limits", navLabel: "Tiers", group: "public", order: 20, section: "reference" };

type Tier = Schemas["TierRow"];

const count = (n: number | undefined) => formatCount(n);

const COLUMNS: Column<Tier>[] = [
  { header: "Tier", cell: (t) => <strong>{t.name}</strong> },
  { header: "Deposits from", numeric: true, cell: (t) => <Usd amount={t.min_deposit} /> },
  { header: "Requests / min", numeric: true, cell: (t) => count(t.rpm) },
  { header: "Per model / min", numeric: true, cell: (t) => count(t.per_model_rpm) },
  { header: "Tokens / min", numeric: true, cell: (t) => count(t.tpm) },
  { header: "Largest request (tokens)", numeric: true, cell: (t) => count(t.max_single_request) },
  { header: "Image jobs (queue)", numeric: true, cell: (t) => tierJobs(t, "image") },
  { header: "Video jobs (queue)", numeric: true, cell: (t) => tierJobs(t, "video") },
  { header: "Audio at once", numeric: true, cell: (t) => count(t.audio_concurrent) },
];

export default function Tiers() {
  const tiers = useQuery({ queryKey: ["tiers"], queryFn: () => unwrap(api.GET("/v1/limits/tiers")), staleTime: 5 * 60_000 });
  return (
    <>
      <p>An account moves up a tier once its deposits reach the tier's threshold; the limits apply per account.</p>
      <QueryView query={tiers}>{(d) => <DataTable columns={COLUMNS} rows={d.tiers} rowKey={(t) => String(t.tier)} />}</QueryView>
    </>
  );
}
