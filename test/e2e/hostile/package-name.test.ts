import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeRegistry, startRegistry } from "../cli/registry.ts";
import { ROOT, svc } from "../cli/support.ts";

const execFileAsync = promisify(execFile);
const { name, version } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
};

/**
 * A registry that serves someone else's package under svc's name (the public registry's `svc` is
 * an SVG converter; a mirror or a mistyped npm_config_registry can serve anything under
 * `@svc-daemon/svc`), at a version above ours, with an install script and an `svc` bin of its own.
 * `svc update` must refuse it from its manifest before npm fetches or runs any of it, and say what
 * it found. (test/e2e/cli/package-update.test.ts shows the same against an installed svc.)
 */
describe("svc update and a stranger's package under svc's name", () => {
  const DESCRIPTION = "Scalable Vector Converter - A small SVG to inline CSS converter.";
  const stranger = "99.0.0";
  let work: string;
  let ran: string;
  let registry: FakeRegistry;
  let env: Record<string, string>;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "svc-hostile-package-"));
    ran = join(work, "stranger-ran");
    const dir = join(work, "stranger");
    await mkdir(dir);
    await writeFile(
      join(dir, "package.json"),
      JSON.stringify({
        name,
        version: stranger,
        description: DESCRIPTION,
        bin: { svc: "cli.js" },
        scripts: { postinstall: `node -e "require('fs').writeFileSync('${ran}', 'ran')"` },
      }),
    );
    await writeFile(join(dir, "cli.js"), "#!/usr/bin/env node\nconsole.log('svg converted');\n");
    const { stdout } = await execFileAsync(
      "npm",
      ["pack", "--ignore-scripts", "--pack-destination", work, "--json"],
      { cwd: dir, env: { ...process.env, npm_config_cache: join(work, "npm-cache") } },
    );
    const tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
    // nothing passes through to a real registry: npm needs no more than the packument to decide
    registry = await startRegistry({
      name,
      tarballs: { [stranger]: tarball },
      latest: stranger,
      upstream: "http://127.0.0.1:9/",
    });
    env = {
      HOME: work,
      npm_config_registry: registry.url,
      npm_config_cache: join(work, "npm-cache"),
      npm_config_update_notifier: "false",
    };
  }, 60_000);

  afterAll(async () => {
    await registry?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("refuses it, naming its name, version and description, and fetches and runs none of it", async () => {
    for (const args of [["update", "--check"], ["update"], ["update", "--version", stranger]]) {
      const refused = await svc(args, env);
      expect(refused.code, `${args.join(" ")}\n${refused.stdout}\n${refused.stderr}`).toBe(1);
      const message = stripVTControlCharacters(refused.stderr).replace(/\s*›\s*/g, " ");
      expect(message).toContain(
        `refusing to install ${name}@${stranger} ("${DESCRIPTION}") from ${registry.url}: it is not svc - ` +
          `its package.json lacks "svc": { "project": "svc-daemon" }, which every svc release carries.`,
      );
      expect(refused.stdout).not.toContain(`${stranger} is available`);
      expect(message).not.toContain("source checkout");
    }
    expect(registry.requests).toContain(`/${name}`);
    expect(registry.requests.filter((path) => path.endsWith(".tgz"))).toEqual([]);
    await expect(readFile(ran, "utf8")).rejects.toThrow();
    expect(JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")).version).toBe(version);
  }, 120_000);
});
