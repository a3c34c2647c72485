/**
 * JSON Schemas (OpenAPI 3.1 dialect) of the answers the route table describes. Routes name them
 * in their `response`; ingress/api/openapi.ts puts each under `components.schemas`.
 */
export type JsonSchema = Record<string, unknown>;

const id = { type: "string" };
const timestamp = { type: "string", format: "date-time" };
const diagnostic = {
  type: ["object", "null"],
  properties: { code: { type: "string" }, message: { type: "string" } },
};

export const SCHEMAS = {
  Error: {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message"],
        properties: { code: { type: "string" }, message: { type: "string" } },
      },
    },
  },
  Whoami: {
    type: "object",
    properties: {
      owner: { type: ["string", "null"] },
      via: { type: "string" },
      scopes: { type: "array", items: { type: "string" } },
      sandboxed: { type: "boolean" },
      crossesOwnerBoundary: { type: "boolean" },
    },
  },
  TriggerSummary: {
    type: "object",
    properties: {
      id,
      kind: { type: "string" },
      source: { type: "string" },
      eventName: { type: ["string", "null"] },
      status: { type: "string" },
      diagnostic,
      createdAt: timestamp,
    },
  },
  TriggerList: {
    type: "object",
    properties: {
      triggers: { type: "array", items: { $ref: "#/components/schemas/TriggerSummary" } },
      nextCursor: { type: ["string", "null"] },
    },
  },
  Trigger: {
    allOf: [{ $ref: "#/components/schemas/TriggerSummary" }, { type: "object", properties: { payload: {} } }],
  },
  TriggerAnswer: {
    type: "object",
    properties: { trigger: { $ref: "#/components/schemas/Trigger" } },
  },
  Trace: {
    type: "object",
    properties: {
      resolved: id,
      trigger: { oneOf: [{ $ref: "#/components/schemas/Trigger" }, { type: "null" }] },
      workloads: { type: "array", items: { type: "object" } },
      invocations: {
        type: "array",
        items: {
          type: "object",
          properties: { id, status: { type: "string" }, diagnostic, target: { type: ["string", "null"] } },
        },
      },
      tasks: { type: "array", items: { type: "object" } },
      artifacts: { type: "object", additionalProperties: { type: "object" } },
    },
  },
  QueueStatus: {
    type: "object",
    properties: {
      active: { type: "integer" },
      waiting: { type: "integer" },
      delayed: { type: "integer" },
      failed: { type: "integer" },
    },
  },
} as const satisfies Record<string, JsonSchema>;

export type SchemaName = keyof typeof SCHEMAS;
