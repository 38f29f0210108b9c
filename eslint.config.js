// Lint: typescript-eslint with type information (floating promises need it), strict on `any`, and the
// module graph of docs/architecture.md ("Layout": the layering of src/) enforced by eslint-plugin-boundaries.
import js from "@eslint/js";
import boundaries from "eslint-plugin-boundaries";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

// The layers of src/, lowest first: docs/architecture.md's "Layout" and the rules under it, read as an order. A module
// may import its own layer and the layers below it, never one above; so no two top-level folders can
// import each other, and adding a folder means choosing its place here.
// - base: the leaf modules (money.ts, errors.ts, ids.ts, metrics.ts, config.ts, memory.ts), which may import only
//   each other and packages;
// - observability: tracing (D40) behind one interface (observability/tracing.ts; the OpenTelemetry SDK in
//   otel.ts), above base and below everything that opens spans: adapters, billing, jobs, webhooks, http;
// - storage: the database (connection, dialects, schema, migrations, job queue; each service folder keeps its
//   own SQL in its `*.repository.ts` modules) and the blob stores; then catalog: model records,
//   prices, limits and tiers;
// - upstreams: adapter interfaces (chat included), the simulator and protocol adapters; below every
//   service, so an adapter cannot reach billing, limits, accounts, jobs or the audio and text services,
//   and it may not use money.ts either (a policy below);
// - contracts: the request contracts (TypeBox schemas of request bodies and their `Static` types), above
//   catalog and upstreams (model lists, audio formats) and below every service, whose input types they
//   are; http/schemas/ builds the route schemas from them;
// - the services, each above what it uses: limits, billing (ledger, holds, the paid-call flow), accounts,
//   webhooks (endpoints, the outbox and its delivery, D31), audio, text, jobs;
// - services.ts builds them, http/ serves them, main.ts starts the process.
const LAYERS = [
  { layer: "base", files: ["src/errors.ts", "src/ids.ts", "src/metrics.ts", "src/config.ts", "src/memory.ts", "src/money.ts"] },
  { layer: "observability", folder: "src/observability" },
  { layer: "storage", folder: "src/storage" },
  { layer: "catalog", folder: "src/catalog" },
  { layer: "upstreams", folder: "src/upstreams" },
  { layer: "contracts", folder: "src/contracts" },
  { layer: "limits", folder: "src/limits" },
  { layer: "billing", folder: "src/billing" },
  { layer: "accounts", folder: "src/accounts" },
  { layer: "webhooks", folder: "src/webhooks" },
  { layer: "audio", folder: "src/audio" },
  { layer: "text", folder: "src/text" },
  { layer: "jobs", folder: "src/jobs" },
  { layer: "services", files: ["src/services.ts"] },
  { layer: "http", folder: "src/http" },
  { layer: "main", files: ["src/main.ts"] },
];

/**
 * The selector of a layer's modules: folders are boundaries "elements", single files are file
 * "categories" (the base files lie at the top of src/; a policy below keeps them at the bottom).
 */
const entity = (layer) => {
  const l = LAYERS.find((x) => x.layer === layer);
  return l.folder ? { element: { type: layer } } : { file: { categories: layer } };
};
/** A local module of any layer. */
const LOCAL = { module: { origin: "local" } };
/** Packages that only the HTTP layer (and main.ts, which starts it) may import. */
const HTTP_PACKAGES = ["fastify", "@fastify/*", "find-my-way"];
/** Database drivers and the query builder: http/ calls services and storage functions instead. */
const SQL_PACKAGES = ["kysely", "kysely/*", "pg"];
/** A service folder's repository modules: its Kysely queries, free functions taking `db` or a transaction first. */
const REPOSITORIES = { file: { path: "src/**/*.repository.ts" } };
/** The loopback fakes of the providers and of Stripe (fakes/, development tools): outside the layers, below none. */
const FAKES = { element: { type: "fakes" } };
/** The ledger's SQL and its PostgreSQL batcher: only billing/ (ledger.ts) calls them. */
const LEDGER_SQL = "src/billing/{ledger.repository,ledger-pg.repository,ledger-pg-batch.repository,ledger-pg-batch}.ts";

const moduleGraph = {
  files: ["src/**/*.ts"],
  plugins: { boundaries },
  settings: {
    "boundaries/elements": [
      ...LAYERS.filter((l) => l.folder).map((l) => ({ type: l.layer, pattern: l.folder, partialMatch: false })),
      { type: "fakes", pattern: "fakes", partialMatch: false },
    ],
    "boundaries/files": LAYERS.filter((l) => l.files).map((l) => ({ category: l.layer, pattern: l.files })),
  },
  rules: {
    // A new top-level folder or file must be given its place in LAYERS.
    "boundaries/no-unknown-files": "error",
    "boundaries/dependencies": [
      "error",
      {
        default: "disallow",
        checkAllOrigins: true,
        // Imports inside one folder are checked too (a repository module, a file of the base layer).
        checkInternals: true,
        // Policies are read in order; a later one overrides an earlier one.
        policies: [
          // Packages and Node's modules are allowed unless a policy below says otherwise.
          { allow: { to: { module: { origin: ["external", "core"] } } } },
          // The layer order: a layer imports itself and the layers below it.
          ...LAYERS.map(({ layer }, i) => ({
            from: entity(layer),
            allow: { to: LAYERS.slice(0, i + 1).map((l) => entity(l.layer)) },
          })),
          {
            from: entity("base"),
            disallow: { to: LOCAL },
            message: "money, errors, ids, metrics and config form the lowest layer: they may import only each other.",
          },
          { from: entity("base"), allow: { to: entity("base") } },
          {
            from: entity("upstreams"),
            disallow: { to: { file: { path: "src/money.ts" } } },
            message: "Adapters know nothing about money: prices and holds belong to catalog/ and billing/.",
          },
          {
            disallow: { to: { module: { source: HTTP_PACKAGES } } },
            message: "Only http/ knows about HTTP: services, adapters and storage never import Fastify.",
          },
          { from: [entity("http"), entity("main")], allow: { to: { module: { source: HTTP_PACKAGES } } } },
          // Where SQL lives (docs/architecture.md, "SQL"): storage/ (connections, dialects, migrations, the job
          // queue) and each service folder's repository modules. Type imports (a `Kysely` or `Transaction` handle
          // passed through) stay allowed everywhere but http/, which the next policy closes to SQL entirely.
          {
            disallow: { to: { module: { source: SQL_PACKAGES } }, dependency: { kind: "value" } },
            message: "SQL lives in src/storage/ and in a folder's *.repository.ts modules: move the query there and call it.",
          },
          { from: [entity("storage"), REPOSITORIES], allow: { to: { module: { source: SQL_PACKAGES } } } },
          {
            from: entity("http"),
            disallow: [{ to: { module: { source: SQL_PACKAGES } } }, { to: entity("storage") }],
            message: "http/ runs no SQL: call a service instead (storage types and the blob store excepted).",
          },
          {
            from: entity("http"),
            allow: [
              // The blob store's interface and key rules (blob-store.ts): routes serve files through it.
              { to: { file: { path: "src/storage/blob-store.ts" } } },
              { to: entity("storage"), dependency: { kind: "type" } },
            ],
          },
          {
            disallow: { to: { file: { path: LEDGER_SQL } } },
            message: "Only billing/ writes ledger rows: the ledger's repositories (billing/ledger*.repository.ts, ledger-pg-batch.ts) are billing's.",
          },
          { from: entity("billing"), allow: { to: { file: { path: LEDGER_SQL } } } },
          // Last, so no policy above can let it through: the product never runs a fake.
          {
            disallow: { to: FAKES },
            message: "src/ never imports fakes/: the loopback fakes are development tools for tests, bench/ and scripts/, not the product.",
          },
        ],
      },
    ],
  },
};

export default tseslint.config(
  // The typed client's types are generated (npm run generate:client); tsc still checks them.
  { ignores: ["node_modules/", "data/", "coverage/", "packages/client/src/schema.ts", "console/dist/", "console-screenshots/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-floating-promises": [
        "error",
        // node:test's test()/describe() return promises the runner itself awaits.
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] }] },
      ],
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-restricted-syntax": [
        "error",
        { selector: "CallExpression[callee.object.name=/^(test|describe|it)$/][callee.property.name='only']", message: "no focused tests" },
      ],
    },
  },
  { files: ["**/*.js"], ...tseslint.configs.disableTypeChecked },
  moduleGraph,
  // The web console (console/, a browser bundle): the rules of hooks, and no Node built-ins.
  {
    files: ["console/**/*.{ts,tsx}"],
    ...reactHooks.configs.flat["recommended-latest"],
  },
  {
    files: ["console/src/**/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["node:*"], message: "The console runs in the browser." },
            {
              group: ["**/packages/client/src/index.ts", "**/packages/client/src/download.ts", "**/packages/client/src/jobs.ts"],
              message: "These client modules use Node built-ins: import openapi-fetch, schema.ts and errors.ts (see console/src/api.ts).",
            },
          ],
        },
      ],
    },
  },
);
