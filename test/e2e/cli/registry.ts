import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real npm registry on loopback for one package: it serves that package's packument and tarballs
 * as the public registry does (`GET /<name>`, `GET /<name>/-/<name>-<version>.tgz`, with `dist.integrity`
 * and `dist.shasum`), and passes every other request (the package's dependencies) through to
 * `upstream`, the registry npm is configured with, so npm can resolve them as usual.
 */
export interface FakeRegistry {
  url: string;
  /** the paths asked for, in order */
  requests: string[];
  close(): Promise<void>;
}

export async function startRegistry(options: {
  name: string;
  /** version → path of the tarball `npm pack` produced */
  tarballs: Record<string, string>;
  latest: string;
  upstream: string;
}): Promise<FakeRegistry> {
  const tarballs = new Map<string, Buffer>();
  const manifests = new Map<string, Record<string, unknown>>();
  const { extractPackageJson } = await import("./tarball.ts");
  for (const [version, path] of Object.entries(options.tarballs)) {
    const bytes = await readFile(path);
    tarballs.set(version, bytes);
    manifests.set(version, await extractPackageJson(path));
  }
  const requests: string[] = [];
  let base = "";
  const server: Server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    requests.push(path);
    if (path === `/${options.name}`) {
      const versions: Record<string, unknown> = {};
      for (const [version, bytes] of tarballs) {
        versions[version] = {
          ...manifests.get(version),
          dist: {
            tarball: `${base}/${options.name}/-/${options.name}-${version}.tgz`,
            shasum: createHash("sha1").update(bytes).digest("hex"),
            integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
          },
        };
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ name: options.name, "dist-tags": { latest: options.latest }, versions }));
      return;
    }
    const tarball = /^\/[^/]+\/-\/[^/]+-(\d+\.\d+\.\d+[^/]*)\.tgz$/.exec(path);
    if (tarball && path.startsWith(`/${options.name}/-/`)) {
      const bytes = tarballs.get(tarball[1]!);
      if (!bytes) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not found"}');
        return;
      }
      res.writeHead(200, { "content-type": "application/octet-stream" }).end(bytes);
      return;
    }
    try {
      const upstream = await fetch(new URL(req.url ?? "/", options.upstream), {
        headers: { accept: req.headers.accept ?? "application/json" },
      });
      const body = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, {
        "content-type": upstream.headers.get("content-type") ?? "application/json",
      });
      res.end(body);
    } catch {
      res.writeHead(502, { "content-type": "application/json" }).end('{"error":"upstream unreachable"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
