/**
 * The usage log (D29): `GET /v1/requests` (records, newest first), `GET /v1/requests/{id}` (a record and
 * its ledger entries), `GET /v1/usage` and `GET /v1/usage.csv` (records summed by day in a time zone, by
 * model, by key or by member) and `GET /v1/usage/export?format=focus` (the FOCUS 1.2 dataset,
 * billing/focus-export.ts). API key or session token; an account sees only its own records, test-mode
 * records (D32) only with `mode=test`.
 */
import { microsToUsd } from "../../money.ts";
import { exportWindow, FOCUS_COLUMNS, focusExport } from "../../billing/focus-export.ts";
import { getRequest, summarizeUsage, UNIT_NAMES } from "../../billing/usage-report.ts";
import type { Services } from "../../services.ts";
import type { App } from "../types.ts";
import { ledgerEntryJson, recordJson, requestsPage, summaryOptions, usageSummary } from "../account-views.ts";
import { principalOf } from "../auth.ts";
import { getRequestSchema, getUsageCsvSchema, getUsageExportSchema, getUsageSchema, listRequestsSchema } from "../schemas/usage.ts";

/** One CSV field: quoted when it holds a comma, a quote or a line break; null is an empty field. */
function csvField(v: string | number | null): string {
  if (v === null) return "";
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function usageRoutes(app: App, services: Services): void {
  const db = services.db.kysely;

  app.get("/v1/requests", { schema: listRequestsSchema }, async (req) => requestsPage(db, principalOf(req).accountId, req.query));

  app.get("/v1/requests/:id", { schema: getRequestSchema }, async (req) => {
    const { record, ledger } = await getRequest(db, principalOf(req).accountId, req.params.id);
    return { ...recordJson(record), ledger: ledger.map(ledgerEntryJson) };
  });

  app.get("/v1/usage", { schema: getUsageSchema }, async (req) => usageSummary(db, principalOf(req).accountId, req.query));

  app.get("/v1/usage.csv", { schema: getUsageCsvSchema }, async (req, reply) => {
    const opts = summaryOptions(req.query);
    const out = await summarizeUsage(db, principalOf(req).accountId, opts);
    const lines = [["group", "requests", "cost_usd", ...UNIT_NAMES].join(",")];
    for (const g of out.groups) {
      lines.push([g.group, g.requests, microsToUsd(g.costMicros), ...UNIT_NAMES.map((u) => g.units[u] ?? 0)].map(csvField).join(","));
    }
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="usage-${opts.groupBy}.csv"`)
      .send(`${lines.join("\r\n")}\r\n`);
  });

  app.get("/v1/usage/export", { schema: getUsageExportSchema }, async (req, reply) => {
    const window = exportWindow(req.query);
    const rows = await focusExport(db, principalOf(req).accountId, {
      ...window,
      mode: req.query.mode ?? "live",
      providerName: services.config.focusProviderName,
    });
    const lines = [FOCUS_COLUMNS.join(",")];
    for (const row of rows) lines.push(FOCUS_COLUMNS.map((c) => csvField(row[c])).join(","));
    const day = (t: number) => new Date(t).toISOString().slice(0, 10);
    const name = `focus-${day(window.from)}-to-${day(window.to - 1)}${req.query.mode === "test" ? "-test" : ""}.csv`;
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="${name}"`)
      .send(`${lines.join("\r\n")}\r\n`);
  });
}
