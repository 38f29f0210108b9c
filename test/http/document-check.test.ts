import assert from "node:assert/strict";
import { test } from "node:test";
import { documentChecker } from "../helpers/document-check.ts";

// The checker every integration test's answers go through must itself catch a drift.
const doc = {
  paths: {
    "/v1/things/{id}": {
      get: {
        responses: {
          "200": { content: { "application/json": { schema: { $ref: "#/components/schemas/Thing" } } } },
          "404": { content: { "application/json": { schema: { type: "object", required: ["error"] } } } },
        },
      },
    },
    "/v1/things/latest": { get: { responses: { "200": { content: { "text/plain": { schema: { type: "string" } } } } } } },
  },
  components: { schemas: { Thing: { type: "object", required: ["id", "n"], properties: { id: { type: "string" }, n: { type: "integer" } } } } },
};

test("the document checker accepts conforming answers and names each drift", () => {
  const { check } = documentChecker(doc);
  assert.deepEqual(check("GET", "/v1/things/t1?x=1", 200, "application/json", { id: "t1", n: 2 }), []);
  assert.deepEqual(check("GET", "/v1/things/t1", 404, "application/json; charset=utf-8", { error: {} }), []);
  assert.match(check("GET", "/v1/things/t1", 200, "application/json", { id: "t1", n: "2" }).join(), /body\/n must be integer/);
  assert.match(check("GET", "/v1/things/t1", 200, "application/json", { id: "t1" }).join(), /must have required property 'n'/);
  assert.match(check("GET", "/v1/things/t1", 500, "application/json", {}).join(), /answered 500, which the document does not list/);
  // A literal path wins over a parameter; a JSON answer where the document has none is a drift.
  assert.match(check("GET", "/v1/things/latest", 200, "application/json", {}).join(), /no JSON body/);
  assert.deepEqual(check("GET", "/v1/things/latest", 200, "text/plain", null), []);
  // Operations the document does not describe are not checked.
  assert.deepEqual(check("POST", "/v1/things/t1", 500, "application/json", {}), []);
  assert.deepEqual(check("GET", "/v1/admin/x", 500, "application/json", {}), []);
});
