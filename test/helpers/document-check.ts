/**
 * Checks every answer a test receives against the gateway's own OpenAPI document (issue 9, point 2): the
 * status must be documented for the operation, and a JSON body must match the documented schema. A
 * drift between what the server answers and what the document (and so the generated client) promises
 * then fails whichever test made the call. Operations hidden from the document and non-JSON bodies are
 * not checked.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

interface Operation {
  responses?: Record<string, { content?: Record<string, unknown> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

/** The checker for one document: `check(...)` returns the problems found (empty when the answer conforms). */
export function documentChecker(doc: Document): {
  check(method: string, url: string, status: number, contentType: string, body: unknown): string[];
} {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(ajv);
  ajv.addSchema(doc, "doc");
  const routes = Object.keys(doc.paths).map((template) => ({
    template,
    re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{[^}]+\\?\}|\{[^}]+\}/g, "[^/]+")}$`),
    // Literal segments win over parameters (`/v1/jobs/events` before `/v1/jobs/{id}`).
    params: (template.match(/\{/g) ?? []).length,
  }));
  routes.sort((a, b) => a.params - b.params);
  const validators = new Map<string, ValidateFunction>();
  const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

  return {
    check(method, url, status, contentType, body) {
      const path = new URL(url, "http://x").pathname;
      const m = method.toLowerCase();
      const route = routes.find((r) => r.re.test(path) && doc.paths[r.template][m]);
      if (!route) return [];
      const responses = doc.paths[route.template][m].responses ?? {};
      const key = [String(status), `${String(status)[0]}XX`, "default"].find((k) => responses[k]);
      if (!key) return [`${method} ${route.template} answered ${status}, which the document does not list (${Object.keys(responses).join(", ")})`];
      if (!contentType.includes("json")) return [];
      const media = Object.keys(responses[key].content ?? {}).find((t) => t.includes("json"));
      if (!media) return [`${method} ${route.template} ${status} answered JSON where the document has no JSON body`];
      const id = `doc#/${pointer("paths", route.template, m, "responses", key, "content", media, "schema")}`;
      const validate = validators.get(id) ?? ajv.compile({ $ref: id });
      validators.set(id, validate);
      if (validate(body)) return [];
      return (validate.errors ?? []).map((e) => `${method} ${route.template} ${status}: body${e.instancePath} ${e.message ?? "is invalid"} ${JSON.stringify(e.params)}`);
    },
  };
}
