import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { loadConfig } from "../../../shared/config/load.ts";
import { ROOT } from "./tools.ts";

const doc = await readFile(join(ROOT, "docs", "operations.md"), "utf8");

/** The text of one `## ` section. */
function section(title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/operations.md has no section "${title}"`);
  const end = doc.indexOf("\n## ", start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

function inOrder(text: string, needles: string[]): void {
  let at = -1;
  for (const needle of needles) {
    const next = text.indexOf(needle, at + 1);
    expect(next, `"${needle}" after position ${at}`).toBeGreaterThan(at);
    at = next;
  }
}

describe("docs/operations.md", () => {
  it("has every section the operations guide promises", () => {
    for (const title of [
      "Install",
      "First webhook in five minutes",
      "Upgrading",
      "Scaling out",
      "Backups and restore",
      "Rotating a webhook secret",
      "Clearing a dead credential",
      "Reading a failed trigger with `svc trace`",
    ]) {
      expect(() => section(title)).not.toThrow();
    }
  });

  it("explains sandboxes: engine, network, images, variants, pull, hardening and their limits", () => {
    const sandboxes = section("Sandboxed runs");
    for (const part of [
      "### Engine and network",
      "### Images",
      "### `svc image pull` and `svc image list`",
      "### What the containers are",
      "sandbox_start_failed",
      "`sandboxes.limits`",
      "### What a sandbox does not protect against",
      "**A pipeline without `sandbox` runs on the worker host**",
      "sandbox_image_missing",
      "sandbox_engine_unreachable",
      "`agent:<variant>`",
      "no-new-privileges",
    ])
      expect(sandboxes).toContain(part);
  });

  it("names only deploy/ files that exist", () => {
    const paths = new Set([...doc.matchAll(/\bdeploy\/[\w./-]+[\w-]/g)].map((m) => m[0]));
    expect(paths.size).toBeGreaterThan(5);
    // files the operator creates, never committed
    const created = [
      "deploy/.env",
      "deploy/secrets",
      "deploy/secrets/instance.key",
      "deploy/compose.override.yaml",
    ];
    for (const path of paths) {
      if (created.includes(path)) continue;
      expect(existsSync(join(ROOT, path)), path).toBe(true);
    }
  });

  it("gives the contract's standard upgrade in its order", () => {
    inOrder(section("Upgrading"), [
      "`svc update`",
      "configuration",
      "`svc doctor`",
      "`svc daemon restart`",
      "`svc daemon status`",
    ]);
  });

  it("gives the three steps for a dead credential in the contract's order", () => {
    inOrder(section("Clearing a dead credential"), [
      "**Replace the secret**",
      "DELETE FROM svc.credential_cooldowns",
      "**Restart the daemon**",
    ]);
  });

  it("explains what PgBouncer transaction pooling does to LISTEN/NOTIFY", () => {
    const text = section("Scaling out");
    expect(text).toContain("LISTEN/NOTIFY");
    expect(text).toMatch(/transaction pooling mode breaks\s+it/);
    expect(text).toContain("session pooling");
    expect(text).toContain("polling");
  });

  it("the five-minute configuration loads, with a bearer source, a target and a pipeline", async () => {
    const blocks = [
      ...section("First webhook in five minutes").matchAll(/cat > (\S+) <<'EOF'\n([\s\S]*?)\n\s*EOF/g),
    ];
    const files = Object.fromEntries(blocks.map((m) => [m[1]!, m[2]!.replace(/^ {3}/gm, "")]));
    expect(Object.keys(files).sort()).toEqual([
      ".svc/agents/notifier/PERSONA.md",
      ".svc/daemon.yaml",
      ".svc/pipelines/hello.yaml",
    ]);
    const daemon = parseAllDocuments(files[".svc/daemon.yaml"]!)[0]!.toJS();
    expect(daemon.webhooks.sources.hello.verify).toBe("bearer");
    const pipeline = parseAllDocuments(files[".svc/pipelines/hello.yaml"]!)[0]!.toJS();
    expect(pipeline.trigger.webhook).toEqual(["hello"]);
    expect(Object.keys(daemon.targets)).toEqual(pipeline.targets);

    const dir = await mkdtemp(join(tmpdir(), "svc-five-minutes-"));
    try {
      for (const [path, text] of Object.entries(files)) {
        await mkdir(join(dir, dirname(path)), { recursive: true });
        await writeFile(join(dir, path), `${text}\n`);
      }
      const result = await loadConfig({ dir: join(dir, ".svc"), env: { HELLO_TOKEN: "0123456789abcdef" } });
      expect(result.problems).toEqual([]);
      expect(result.ok).toBe(true);
      const unset = await loadConfig({ dir: join(dir, ".svc"), env: {} });
      expect(unset.ok).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
