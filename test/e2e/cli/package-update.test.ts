import { execFile, execFileSync, spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeRegistry, packStranger, STRANGER_DESCRIPTION, startRegistry } from "./registry.ts";
import { daemonYaml, freePort, PERSONA_MD, PIPELINE_YAML, ROOT, type Run } from "./support.ts";
import { listTarball } from "./tarball.ts";

/**
 * The npm package as users get it: `npm pack`, installed with `npm install --global --prefix` into a
 * temporary prefix, run from there, then updated by `svc update` from a registry on loopback that
 * publishes a newer release. Installing fetches svc's dependencies through npm (its cache first:
 * `--prefer-offline`), so this file takes a minute or two.
 */
const execFileAsync = promisify(execFile);
const PATH = `${join(ROOT, "node_modules/.bin")}:${process.env.PATH ?? ""}`;
const { name, version } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
};
const nameRe = name.replace(/[./]/g, "\\$&");
const next = version.replace(/\.(\d+)$/, (_, patch: string) => `.${Number(patch) + 1}`);

let work: string;
let prefix: string;
let tarball: string;
let registry: FakeRegistry;
let db: TestDatabase;
let env: Record<string, string>;

function run(command: string, args: string[], extra: Record<string, string> = {}, cwd = work): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH, HOME: work, NO_COLOR: "1", npm_config_cache: npmCache(), ...TRUST, ...extra },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The machine's certificate settings: a child npm with its own prefix no longer reads the global
 * npmrc that names the CA file, and a registry behind an intercepting proxy then fails its TLS.
 */
const TRUST: Record<string, string> = (() => {
  const trust: Record<string, string> = {};
  for (const name of ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"]) {
    const value = process.env[name];
    if (value) trust[name] = value;
  }
  const cafile = execFileSync("npm", ["config", "get", "cafile"], { encoding: "utf8" }).trim();
  if (cafile && cafile !== "null" && cafile !== "undefined") trust.npm_config_cafile = cafile;
  return trust;
})();

/** npm's own cache of this machine, so installs reuse what `npm ci` downloaded */
function npmCache(): string {
  return process.env.npm_config_cache ?? join(process.env.HOME ?? "/root", ".npm");
}

const installed = (args: string[], extra: Record<string, string> = {}) =>
  run(join(prefix, "bin", "svc"), args, { ...env, ...extra });

function expectOk(result: Run): Run {
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
  return result;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "svc-package-"));
  prefix = join(work, "prefix");
  const packed = expectOk(await run("npm", ["pack", "--pack-destination", work, "--json"], {}, ROOT));
  tarball = join(
    work,
    (JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as { filename: string }[])[0]!.filename,
  );

  // the next release: the same package with a higher version and its own changelog entry
  const nextDir = join(work, "next");
  await mkdir(nextDir);
  await execFileAsync("tar", ["-xzf", tarball, "-C", nextDir]);
  const manifestPath = join(nextDir, "package", "package.json");
  const manifest = JSON.parse(await readFile(manifestPath, "utf8")) as Record<string, unknown>;
  await writeFile(manifestPath, JSON.stringify({ ...manifest, version: next }, null, 2));
  const oclifManifest = join(nextDir, "package", "oclif.manifest.json");
  const commands = JSON.parse(await readFile(oclifManifest, "utf8")) as Record<string, unknown>;
  await writeFile(oclifManifest, JSON.stringify({ ...commands, version: next }));
  const changelog = join(nextDir, "package", "CHANGELOG.md");
  const text = await readFile(changelog, "utf8");
  await writeFile(
    changelog,
    text.replace(/^## /m, `## ${next}\n\nMigration: nothing to migrate (the test release).\n\n## `),
  );
  const nextPacked = expectOk(
    await run(
      "npm",
      ["pack", "--ignore-scripts", "--pack-destination", work, "--json"],
      {},
      join(nextDir, "package"),
    ),
  );
  const nextTarball = join(work, (JSON.parse(nextPacked.stdout) as { filename: string }[])[0]!.filename);

  const upstream = (await execFileAsync("npm", ["config", "get", "registry"])).stdout.trim();
  registry = await startRegistry({
    name,
    tarballs: { [version]: tarball, [next]: nextTarball },
    latest: next,
    upstream,
  });

  db = await createTestDatabase(inject("adminDatabaseUrl"));
  const configDir = join(work, ".svc");
  await mkdir(join(configDir, "pipelines"), { recursive: true });
  await mkdir(join(configDir, "agents", "helper"), { recursive: true });
  await writeFile(join(configDir, "daemon.yaml"), daemonYaml());
  await writeFile(join(configDir, "pipelines", "hello.yaml"), PIPELINE_YAML);
  await writeFile(join(configDir, "agents", "helper", "PERSONA.md"), PERSONA_MD);
  env = {
    SVC_CONFIG_DIR: configDir,
    SVC_DATABASE_URL: db.url,
    SVC_PORT: String(await freePort()),
    HELLO_TOKEN: "hello-token-e2e",
    READER_TOKEN: "reader-token-e2e",
    LEGACY_TOKEN: "legacy-token-e2e",
    npm_config_prefer_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
  };
}, 300_000);

afterAll(async () => {
  if (prefix && env) await installed(["daemon", "stop"]).catch(() => {});
  await registry?.close();
  await db?.drop();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe("the npm package", () => {
  it("holds what svc runs and no tests", async () => {
    const files = await listTarball(tarball);
    for (const file of [
      "package/bin/svc.js",
      "package/bin/strip-types.js",
      "package/bin/node-floor.js",
      "package/cli/commands/update.ts",
      "package/db/migrations/001_initial.sql",
      "package/examples/reference/.svc/daemon.yaml",
      "package/oclif.manifest.json",
      "package/CHANGELOG.md",
      "package/README.md",
      "package/docs/operations.md",
    ]) {
      expect(files).toContain(file);
    }
    expect(files.filter((file) => file.startsWith("package/test/"))).toEqual([]);
    expect(files.filter((file) => file.includes("node_modules"))).toEqual([]);
  });

  it("installs into a prefix and runs from there", async () => {
    expectOk(await run("npm", ["install", "--global", "--prefix", prefix, tarball], env));
    const ran = expectOk(await installed(["--version"]));
    expect(ran.stdout).toMatch(new RegExp(`^${nameRe}/${version.replace(/\./g, "\\.")} `));
    expect(ran.stderr).toBe("");
    const validate = await installed(
      ["config", "validate", "--dir", join(prefix, "lib/node_modules", name, "examples/reference/.svc")],
      {
        DEPLOY_HOOK_TOKEN: "a",
        LINEAR_WEBHOOK_SECRET: "b",
        OPENAI_KEY_A: "c",
        OPENAI_KEY_B: "d",
        CHAT_BOT_TOKEN: "e",
        CI_TOKEN: "f",
        GITHUB_APP_ID: "7",
        GITHUB_APP_PRIVATE_KEY: generateKeyPairSync("rsa", {
          modulusLength: 2048,
          privateKeyEncoding: { type: "pkcs8", format: "pem" },
          publicKeyEncoding: { type: "spki", format: "pem" },
        }).privateKey,
      },
    );
    expect(validate.stdout).toContain("configuration valid: 5 pipelines, 3 sources, 3 targets");
    expect(validate.code).toBe(0);
  }, 600_000);
});

describe("the installed package on a bare PATH", () => {
  it("finds its own qmd: knowledge reindex and doctor with only Node 24 and the prefix on PATH", async () => {
    const dir = join(work, "with-knowledge");
    await cp(join(work, ".svc"), dir, { recursive: true });
    await mkdir(join(dir, "knowledge"));
    await writeFile(
      join(dir, "knowledge", "refunds.md"),
      "# Refunds\n\nCustomers may return goods for a refund within 45 days of delivery.\n",
    );
    // nothing of the checkout (its node_modules/.bin holds a qmd) and nothing of the machine
    const bare = { ...env, SVC_CONFIG_DIR: dir, PATH: `${join(prefix, "bin")}:${dirname(process.execPath)}` };
    const reindex = expectOk(await installed(["knowledge", "reindex", "--dir", dir], bare));
    expect(reindex.stdout).toContain("knowledge index: 1 documents indexed");
    const doctor = await installed(["doctor", "--dir", dir], bare);
    expect(doctor.stdout).toMatch(/knowledge\b.*1 documents, local engine, qmd \d+\.\d+\.\d+/);
    expect(`${doctor.stdout}${doctor.stderr}`).not.toContain("retrieval tool qmd");
  }, 120_000);
});

describe("svc update against a registry on loopback", () => {
  let url: string;

  it("--check reports the newer release and installs nothing", async () => {
    const started = expectOk(await installed(["daemon", "start", "--json"]));
    url = (JSON.parse(started.stdout) as { url: string }).url;
    const check = expectOk(await installed(["update", "--check"], { npm_config_registry: registry.url }));
    expect(check.stdout).toContain(
      `${name} ${next} is available (installed: ${version}); run \`svc update\` to install it`,
    );
    expect(registry.requests).toContain(`/${name}`);
    expect(expectOk(await installed(["--version"])).stdout).toContain(`${name}/${version} `);
  }, 300_000);

  it("installs the newer release into the prefix, prints its notes and the next steps", async () => {
    const update = expectOk(await installed(["update"], { npm_config_registry: registry.url }));
    expect(update.stdout).toContain(
      `installing ${name}@${next} with npm into ${prefix} (installed: ${version})`,
    );
    expect(update.stdout).toContain(`\n## ${next}\nMigration: nothing to migrate (the test release).\n`);
    expect(update.stdout).not.toContain(`## ${version}\n`);
    expect(update.stdout).toContain("svc config migrate --dry-run");
    expect(update.stdout).toContain("svc daemon restart");
    expect(expectOk(await installed(["--version"])).stdout).toContain(`${name}/${next} `);
  }, 600_000);

  it("leaves the running daemon on its version until svc daemon restart", async () => {
    const root = (await (await fetch(`${url}/`)).json()) as { version: string };
    expect(root.version).toBe(version);
    const status = expectOk(await installed(["daemon", "status", "--json"], { SVC_DAEMON_URL: url }));
    expect(JSON.parse(status.stdout).version).toEqual({ running: version, installed: next });
    const text = expectOk(await installed(["daemon", "status"], { SVC_DAEMON_URL: url }));
    expect(text.stdout).toContain(
      `version: ${version} running, ${next} installed - run \`svc daemon restart\` to switch`,
    );

    expectOk(await installed(["daemon", "restart"]));
    const after = expectOk(await installed(["daemon", "status", "--json"], { SVC_DAEMON_URL: url }));
    expect(JSON.parse(after.stdout).version).toEqual({ running: next, installed: next });
  }, 300_000);

  it("says when the installed release is the newest", async () => {
    const check = expectOk(await installed(["update", "--check"], { npm_config_registry: registry.url }));
    expect(check.stdout).toContain(`${name} ${next} is installed, the newest release on ${registry.url}`);
    const missing = await installed(["update", "--version", "9.9.9"], { npm_config_registry: registry.url });
    expect(missing.code).toBe(1);
    // oclif wraps the error over lines prefixed with " ›" and highlights it
    const message = stripVTControlCharacters(missing.stderr).replace(/\s*›\s*/g, " ");
    expect(message).toContain(`${name}@9.9.9 is not published on ${registry.url} - the newest is ${next}`);
  }, 120_000);
});

describe("svc update against a registry that serves someone else's package under svc's name", () => {
  // what the public registry's `svc` is: an unrelated program, here at a higher version than ours
  const DESCRIPTION = STRANGER_DESCRIPTION;
  const stranger = next.replace(/\.(\d+)$/, (_, patch: string) => `.${Number(patch) + 1}`);
  let foreign: FakeRegistry;
  let ran: string;

  beforeAll(async () => {
    ran = join(work, "stranger-ran");
    const strangerTarball = await packStranger(work, { name, version: stranger }, ran);
    foreign = await startRegistry({
      name,
      tarballs: { [stranger]: strangerTarball },
      latest: stranger,
      upstream: (await execFileAsync("npm", ["config", "get", "registry"])).stdout.trim(),
    });
  }, 120_000);

  afterAll(async () => {
    await foreign?.close();
  });

  it("refuses it by its own manifest, names what it found, and installs nothing", async () => {
    const before = expectOk(await installed(["--version"])).stdout;
    for (const args of [["update"], ["update", "--check"], ["update", "--version", stranger]]) {
      const refused = await installed(args, { npm_config_registry: foreign.url });
      expect(refused.code, `${args.join(" ")}\n${refused.stdout}\n${refused.stderr}`).toBe(1);
      const message = stripVTControlCharacters(refused.stderr).replace(/\s*›\s*/g, " ");
      expect(message).toContain(
        `refusing to install ${name}@${stranger} ("${DESCRIPTION}") from ${foreign.url}: it is not svc - ` +
          `its package.json lacks "svc": { "project": "svc-daemon" }, which every svc release carries.`,
      );
      expect(message).toContain("nothing was installed");
      expect(refused.stdout).not.toContain("installing");
    }
    // npm read the packument and nothing else: no tarball fetched, no script run, svc unchanged
    expect(foreign.requests.filter((path) => path.endsWith(".tgz"))).toEqual([]);
    expect(foreign.requests).toContain(`/${name}`);
    await expect(readFile(ran, "utf8")).rejects.toThrow();
    expect(expectOk(await installed(["--version"])).stdout).toBe(before);
    const manifest = JSON.parse(
      await readFile(join(prefix, "lib/node_modules", name, "package.json"), "utf8"),
    ) as { version: string; description: string };
    expect(manifest).toMatchObject({ version: next });
    expect(manifest.description).not.toBe(DESCRIPTION);
  }, 120_000);
});
