import { readdir, readFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, ROOT } from "./tools.ts";

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions with line continuations joined and comments dropped. */
function instructions(text: string): Instruction[] {
  const joined = text
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("#"))
    .join("\n")
    .replace(/\\\n/g, " ");
  return joined
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const space = line.indexOf(" ");
      return { op: line.slice(0, space).toUpperCase(), args: line.slice(space + 1).trim() };
    });
}

const dockerfile = instructions(await readFile(join(DEPLOY, "Dockerfile"), "utf8"));
const stageStarts = dockerfile.flatMap((ins, index) => (ins.op === "FROM" ? [index] : []));
const runtime = dockerfile.slice(stageStarts.at(-1));
const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  oclif: { plugins: string[]; commands: string };
  bin: Record<string, string>;
};

/** Value imports of a TypeScript/JavaScript file (type-only imports vanish at run time). */
function importsOf(source: string): string[] {
  const found: string[] = [];
  const statement = /^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+"([^"]+)"/gm;
  const bare = /^\s*import\s+"([^"]+)"/gm;
  const dynamic = /\bimport\(\s*"([^"]+)"\s*\)/g;
  for (const re of [statement, bare, dynamic]) for (const m of source.matchAll(re)) found.push(m[1]!);
  return found;
}

function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** Every file and package reachable at run time from the `svc` binary. */
async function runtimeGraph(): Promise<{ files: Set<string>; packages: Set<string> }> {
  const files = new Set<string>();
  const packages = new Set<string>(pkg.oclif.plugins);
  // oclif imports each file of the commands directory (pattern strategy)
  const commandFiles = (await readdir(resolve(ROOT, pkg.oclif.commands), { recursive: true }))
    .filter((file) => file.endsWith(".ts"))
    .map((file) => resolve(ROOT, pkg.oclif.commands, file));
  const queue = [resolve(ROOT, pkg.bin.svc!), ...commandFiles];
  while (queue.length) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of importsOf(await readFile(file, "utf8"))) {
      if (specifier.startsWith(".")) queue.push(resolve(dirname(file), specifier));
      else if (!specifier.startsWith("node:") && !builtinModules.includes(specifier)) {
        packages.add(packageName(specifier));
      }
    }
  }
  return { files, packages };
}

describe("deploy/Dockerfile", () => {
  it("is multi-stage on the Node 24 slim image", () => {
    const arg = dockerfile.find((i) => i.op === "ARG" && i.args.startsWith("NODE_IMAGE="));
    expect(arg?.args).toMatch(/^NODE_IMAGE=node:24(\.[\d.]+)?-(bookworm-|trixie-)?slim$/);
    const froms = dockerfile.filter((i) => i.op === "FROM").map((i) => i.args);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ARG reference
    expect(froms).toEqual(["${NODE_IMAGE} AS deps", "${NODE_IMAGE} AS runtime"]);
  });

  it("installs production dependencies only, from the lockfile", () => {
    const deps = dockerfile.slice(stageStarts[0], stageStarts[1]);
    const install = deps.filter((i) => i.op === "RUN" && i.args.includes("npm "));
    expect(install).toHaveLength(1);
    expect(install[0]!.args).toMatch(/\bnpm ci --omit=dev\b/);
    expect(runtime.filter((i) => i.op === "RUN").some((i) => /\bnpm (ci|install|i)\b/.test(i.args))).toBe(
      false,
    );
    expect(runtime).toContainEqual({ op: "COPY", args: "--from=deps /app/node_modules ./node_modules" });
  });

  it("runs as a non-root user, with the two roles as commands", () => {
    const users = runtime.filter((i) => i.op === "USER").map((i) => i.args);
    expect(users).toEqual(["svc:svc"]);
    expect(runtime.find((i) => i.op === "RUN" && i.args.includes("useradd"))?.args).toMatch(/--uid 10001/);
    const entrypoint = JSON.parse(runtime.find((i) => i.op === "ENTRYPOINT")!.args) as string[];
    expect(entrypoint.slice(-2)).toEqual(["node", "/app/bin/svc.js"]);
    expect(JSON.parse(runtime.find((i) => i.op === "CMD")!.args)).toEqual(["ingress"]);
    expect(runtime.find((i) => i.op === "STOPSIGNAL")?.args).toBe("SIGTERM");
    const env = runtime
      .filter((i) => i.op === "ENV")
      .map((i) => i.args)
      .join(" ");
    expect(env).toContain("SVC_HOST=0.0.0.0");
    expect(env).toContain("SVC_CONFIG_DIR=/etc/svc");
    expect(env).not.toMatch(/SVC_DATABASE_URL|PASSWORD|TOKEN|SECRET/);
  });

  it("checks health on /health and only a 200 passes", () => {
    const health = runtime.find((i) => i.op === "HEALTHCHECK")!.args;
    expect(health).toContain("/health");
    expect(health).toContain("r.status === 200");
    expect(health).toContain("process.env.SVC_PORT ?? 7420");
  });

  it("copies every source directory the `svc` binary reaches, and nothing else of the tree", async () => {
    const { files } = await runtimeGraph();
    const needed = new Set([...files].map((f) => relative(ROOT, f).split("/")[0]!));
    const copied = runtime
      .filter((i) => i.op === "COPY" && !i.args.startsWith("--from"))
      .map((i) => i.args.split(/\s+/)[0]!.replace(/\/$/, ""));
    for (const dir of needed) expect(copied, `${dir}/ is imported at run time`).toContain(dir);
    for (const dir of ["test", "bench", "scripts", "docs", "deploy", ".svc", "node_modules"]) {
      expect(copied).not.toContain(dir);
    }
  });

  it("every package the `svc` binary imports is a production dependency", async () => {
    const { packages } = await runtimeGraph();
    expect(packages.size).toBeGreaterThan(3);
    for (const name of packages)
      expect(Object.keys(pkg.dependencies), `${name} is imported at run time`).toContain(name);
  });
});

describe("deploy/images: the sandbox images", () => {
  const image = async (name: string) =>
    instructions(await readFile(join(DEPLOY, "images", name, "Dockerfile"), "utf8"));

  it("each takes its base image as the build argument BASE_IMAGE and ends as a non-root user", async () => {
    for (const [name, base] of [
      ["agent", "node:24-bookworm-slim"],
      ["studio", "agent:default"],
    ] as const) {
      const steps = await image(name);
      expect(steps[0], name).toEqual({ op: "ARG", args: `BASE_IMAGE=${base}` });
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own variable reference
      expect(steps[1], name).toEqual({ op: "FROM", args: "${BASE_IMAGE}" });
      expect(steps.at(-1), name).toEqual({ op: "USER", args: "1000:1000" });
    }
  });

  it("the agent image installs exactly the CLI versions pinned in versions.json", async () => {
    const steps = await image("agent");
    expect(steps).toContainEqual({ op: "COPY", args: "versions.json /opt/svc/agent-versions.json" });
    const install = steps.find((step) => step.op === "RUN" && step.args.includes("npm install --global"));
    expect(install?.args).toContain('require("/opt/svc/agent-versions.json")');
    expect(install?.args).toContain("claude --version && codex --version");
  });
});
