import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeRegistry, packStranger, STRANGER_DESCRIPTION, startRegistry } from "../cli/registry.ts";
import { ROOT, svc } from "../cli/support.ts";

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
  const DESCRIPTION = STRANGER_DESCRIPTION;
  const stranger = "99.0.0";
  let work: string;
  let ran: string;
  let registry: FakeRegistry;
  let env: Record<string, string>;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "svc-hostile-package-"));
    ran = join(work, "stranger-ran");
    const tarball = await packStranger(work, { name, version: stranger }, ran);
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
