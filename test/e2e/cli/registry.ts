import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

/** The public registry's `svc`: an SVG converter, nothing of ours. */
export const STRANGER_DESCRIPTION = "Scalable Vector Converter - A small SVG to inline CSS converter.";

/**
 * Packs, under `work`, someone else's package published as `name@version`: installed, it would run
 * its own code as the operator (a postinstall script that writes `ranFile`, and an `svc` bin).
 * Returns the tarball's path.
 */
export async function packStranger(
  work: string,
  package_: { name: string; version: string },
  ranFile: string,
): Promise<string> {
  const dir = join(work, "stranger");
  await mkdir(dir);
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({
      ...package_,
      description: STRANGER_DESCRIPTION,
      bin: { svc: "cli.js" },
      scripts: { postinstall: `node -e "require('fs').writeFileSync('${ranFile}', 'ran')"` },
    }),
  );
  await writeFile(join(dir, "cli.js"), "#!/usr/bin/env node\nconsole.log('svg converted');\n");
  const { stdout } = await promisify(execFile)(
    "npm",
    ["pack", "--ignore-scripts", "--pack-destination", work, "--json"],
    { cwd: dir, env: { ...process.env, npm_config_cache: join(work, "npm-cache") } },
  );
  return join(work, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
}

/**
 * A real npm registry on loopback for one package: it serves that package's packument and tarballs
 * as the public registry does (`GET /<name>` - npm asks for a scoped name as `/@scope%2fname` -, and
 * `GET /<name>/-/<unscoped name>-<version>.tgz`, with `dist.integrity` and `dist.shasum`; each version's
 * manifest is the tarball's own package.json, custom fields included), and passes every other request
 * (the package's dependencies) through to `upstream`, the registry npm is configured with, so npm can
 * resolve them as usual.
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
  const unscoped = options.name.replace(/^@[^/]+\//, "");
  const published = new Date();
  let base = "";
  const server: Server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    requests.push(path);
    if (path === `/${options.name}`) {
      const versions: Record<string, unknown> = {};
      const time: Record<string, string> = {};
      for (const [version, bytes] of tarballs) {
        time[version] = published.toISOString();
        versions[version] = {
          ...manifests.get(version),
          _id: `${options.name}@${version}`,
          dist: {
            tarball: `${base}/${options.name}/-/${unscoped}-${version}.tgz`,
            shasum: createHash("sha1").update(bytes).digest("hex"),
            integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
          },
        };
      }
      res.writeHead(200, { "content-type": "application/json" });
      const latest = manifests.get(options.latest) ?? {};
      res.end(
        JSON.stringify({
          _id: options.name,
          name: options.name,
          description: latest.description,
          "dist-tags": { latest: options.latest },
          versions,
          time: { created: published.toISOString(), modified: published.toISOString(), ...time },
        }),
      );
      return;
    }
    const tarball = new RegExp(
      `^/${literal(options.name)}/-/${literal(unscoped)}-(\\d+\\.\\d+\\.\\d+[^/]*)\\.tgz$`,
    ).exec(path);
    if (tarball) {
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

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
