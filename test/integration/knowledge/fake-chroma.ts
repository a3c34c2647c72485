import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

interface Record_ {
  id: string;
  embedding: number[];
  document: string | null;
  metadata: Record<string, unknown> | null;
}

/** the request bodies the client sends (collections, add/upsert, query) */
interface ChromaBody {
  name?: string;
  configuration?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  get_or_create?: boolean;
  ids?: string[];
  embeddings?: number[][];
  documents?: (string | null)[];
  metadatas?: (Record<string, unknown> | null)[];
  query_embeddings?: number[][];
  n_results?: number;
  include?: string[];
}

interface Collection {
  id: string;
  name: string;
  configuration_json: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  records: Map<string, Record_>;
}

/**
 * The subset of Chroma's v2 HTTP API the `chromadb` client uses for svc's vector engine, on
 * loopback: heartbeat, pre-flight checks, tenants/databases, collections (create, get-or-create,
 * get, delete), add, upsert, count and query with cosine distance. Errors answer like Chroma:
 * `{ error, message }` with 404 for a missing collection. Every request is recorded.
 */
export class FakeChroma {
  readonly requests: { method: string; path: string }[] = [];
  readonly collections = new Map<string, Collection>();
  #server: Server | undefined;
  url = "";

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        this.requests.push({ method: req.method ?? "", path: (req.url ?? "").split("?")[0]! });
        try {
          const [status, answer] = this.#route(req, text ? (JSON.parse(text) as ChromaBody) : {});
          send(res, status, answer);
        } catch (error) {
          send(res, 500, { error: "InternalError", message: (error as Error).message });
        }
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.#server?.close(resolve));
  }

  #route(req: IncomingMessage, body: ChromaBody): [number, unknown] {
    const path = (req.url ?? "").split("?")[0]!;
    const method = req.method;
    if (method === "GET" && path === "/api/v2/heartbeat")
      return reply(200, { "nanosecond heartbeat": Number(process.hrtime.bigint()) });
    if (method === "GET" && path === "/api/v2/version") return reply(200, "1.0.0");
    if (method === "GET" && path === "/api/v2/pre-flight-checks")
      return reply(200, { max_batch_size: 1000, supports_base64_encoding: false });
    if (method === "GET" && path === "/api/v2/auth/identity")
      return reply(200, { user_id: "", tenant: "default_tenant", databases: ["default_database"] });
    let match = /^\/api\/v2\/tenants\/([^/]+)$/.exec(path);
    if (method === "GET" && match) return reply(200, { name: match[1] });
    match = /^\/api\/v2\/tenants\/([^/]+)\/databases\/([^/]+)$/.exec(path);
    if (method === "GET" && match) return reply(200, { id: randomUUID(), name: match[2], tenant: match[1] });
    match = /^\/api\/v2\/tenants\/([^/]+)\/databases\/([^/]+)\/collections$/.exec(path);
    if (match) {
      if (method === "GET")
        return reply(
          200,
          [...this.collections.values()].map((c) => model(c, match!)),
        );
      if (method === "POST") {
        const existing = this.collections.get(body.name ?? "");
        if (existing) {
          if (body.get_or_create) return reply(200, model(existing, match));
          return reply(409, {
            error: "UniqueConstraintError",
            message: `Collection [${body.name}] already exists`,
          });
        }
        const created: Collection = {
          id: randomUUID(),
          name: body.name ?? "",
          configuration_json: body.configuration ?? {},
          metadata: body.metadata ?? null,
          records: new Map(),
        };
        this.collections.set(created.name, created);
        return reply(200, model(created, match));
      }
    }
    match = /^\/api\/v2\/tenants\/([^/]+)\/databases\/([^/]+)\/collections\/([^/]+)(?:\/([a-z_]+))?$/.exec(
      path,
    );
    if (match) {
      const [, , , ref, action] = match;
      const collection = [...this.collections.values()].find((c) => c.id === ref || c.name === ref);
      if (!collection)
        return reply(404, { error: "NotFoundError", message: `Collection [${ref}] does not exist` });
      if (!action && method === "GET") return reply(200, model(collection, match));
      if (!action && method === "DELETE") {
        this.collections.delete(collection.name);
        return reply(200, {});
      }
      if ((action === "add" || action === "upsert") && method === "POST") {
        (body.ids ?? []).forEach((id, i) => {
          collection.records.set(id, {
            id,
            embedding: body.embeddings?.[i] ?? [],
            document: body.documents?.[i] ?? null,
            metadata: body.metadatas?.[i] ?? null,
          });
        });
        return reply(action === "add" ? 201 : 200, {});
      }
      if (action === "count" && method === "GET") return reply(200, collection.records.size);
      if (action === "query" && method === "POST") return reply(200, query(collection, body));
    }
    return reply(404, { error: "NotFound", message: `no route ${method} ${path}` });
  }
}

function model(collection: Collection, match: RegExpExecArray) {
  return {
    id: collection.id,
    name: collection.name,
    tenant: match[1],
    database: match[2],
    configuration_json: collection.configuration_json,
    metadata: collection.metadata,
    dimension: collection.records.values().next().value?.embedding.length ?? null,
    log_position: 0,
    version: 0,
  };
}

function query(collection: Collection, body: ChromaBody) {
  const n = body.n_results ?? 10;
  const include: string[] = body.include ?? ["documents", "metadatas", "distances"];
  const rows = (body.query_embeddings ?? []).map((vector) =>
    [...collection.records.values()]
      .map((record) => ({ record, distance: 1 - cosine(vector, record.embedding) }))
      .sort((a, b) => a.distance - b.distance)
      .slice(0, n),
  );
  return {
    ids: rows.map((r) => r.map((x) => x.record.id)),
    documents: include.includes("documents") ? rows.map((r) => r.map((x) => x.record.document)) : null,
    metadatas: include.includes("metadatas") ? rows.map((r) => r.map((x) => x.record.metadata)) : null,
    distances: include.includes("distances") ? rows.map((r) => r.map((x) => x.distance)) : null,
    embeddings: null,
    uris: null,
    include,
  };
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

function reply(status: number, body: unknown): [number, unknown] {
  return [status, body];
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
