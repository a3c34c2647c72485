import { access, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseDuration } from "../../../shared/config/duration.ts";
import { DEPLOY, findTool, reportMissingTool, runTool } from "./tools.ts";

const SYSTEMD = join(DEPLOY, "systemd");
const UNITS = ["svc-ingress.service", "svc-worker.service"] as const;

type Unit = Record<string, Record<string, string[]>>;

/** systemd's INI dialect: sections, repeatable keys, `#`/`;` comments. */
function parseUnit(text: string): Unit {
  const unit: Unit = {};
  let section: Record<string, string[]> | undefined;
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) {
      section = unit[header[1]!] ?? {};
      unit[header[1]!] = section;
      continue;
    }
    const pair = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(line);
    if (!pair || !section)
      throw new Error(`line ${index + 1}: not a key=value line inside a section: ${raw}`);
    const values = section[pair[1]!] ?? [];
    values.push(pair[2]!);
    section[pair[1]!] = values;
  }
  return unit;
}

/** Keys these units may use: a misspelt key is only a warning to systemd, so catch it here. */
const KNOWN: Record<string, string[]> = {
  Unit: [
    "Description",
    "Documentation",
    "Wants",
    "Requires",
    "After",
    "StartLimitIntervalSec",
    "StartLimitBurst",
  ],
  Service: [
    "Type",
    "User",
    "Group",
    "WorkingDirectory",
    "EnvironmentFile",
    "Environment",
    "LoadCredential",
    "ExecStart",
    "KillSignal",
    "KillMode",
    "TimeoutStopSec",
    "Restart",
    "RestartSec",
    "ReadWritePaths",
    "NoNewPrivileges",
    "ProtectSystem",
    "ProtectHome",
    "PrivateTmp",
    "PrivateDevices",
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "ProtectProc",
    "RestrictAddressFamilies",
    "RestrictNamespaces",
    "RestrictRealtime",
    "RestrictSUIDSGID",
    "LockPersonality",
    "SystemCallArchitectures",
    "SystemCallFilter",
    "CapabilityBoundingSet",
    "AmbientCapabilities",
    "UMask",
  ],
  Install: ["WantedBy"],
};

function seconds(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new Error(`not a duration this test reads: ${value}`);
  return ms / 1000;
}

const units = Object.fromEntries(
  await Promise.all(
    UNITS.map(async (name) => [name, parseUnit(await readFile(join(SYSTEMD, name), "utf8"))] as const),
  ),
) as Record<(typeof UNITS)[number], Unit>;

function one(unit: Unit, section: string, key: string): string {
  const values = unit[section]?.[key];
  if (values?.length !== 1) throw new Error(`expected exactly one ${section}.${key}, got ${values}`);
  return values[0]!;
}

function environment(unit: Unit): Record<string, string> {
  return Object.fromEntries(
    (unit.Service?.Environment ?? []).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
  );
}

describe("systemd units (in-process)", () => {
  for (const name of UNITS) {
    const role = name === "svc-ingress.service" ? "ingress" : "worker";
    const unit = units[name];

    it(`${name}: only known keys, in the right sections`, () => {
      expect(Object.keys(unit).sort()).toEqual(["Install", "Service", "Unit"]);
      for (const [section, keys] of Object.entries(unit)) {
        for (const key of Object.keys(keys)) expect(KNOWN[section], `${section}.${key}`).toContain(key);
      }
    });

    it(`${name}: runs \`svc ${role}\` as the dedicated svc user`, () => {
      expect(one(unit, "Service", "ExecStart")).toBe(`/usr/bin/node /opt/svc/bin/svc.js ${role}`);
      expect(one(unit, "Service", "User")).toBe("svc");
      expect(one(unit, "Service", "Group")).toBe("svc");
      expect(one(unit, "Install", "WantedBy")).toBe("multi-user.target");
    });

    it(`${name}: restarts on failure and stops with SIGTERM`, () => {
      expect(one(unit, "Service", "Restart")).toBe("on-failure");
      expect(one(unit, "Service", "KillSignal")).toBe("SIGTERM");
      // SIGTERM to svc only: running setup steps and agents are left to svc's drain
      expect(one(unit, "Service", "KillMode")).toBe("mixed");
    });

    it(`${name}: hardened`, () => {
      for (const [key, value] of [
        ["NoNewPrivileges", "yes"],
        ["ProtectSystem", "strict"],
        ["ProtectHome", "yes"],
        ["PrivateTmp", "yes"],
        ["PrivateDevices", "yes"],
        ["CapabilityBoundingSet", ""],
        ["UMask", "0077"],
      ] as const) {
        expect(one(unit, "Service", key), key).toBe(value);
      }
      // V8 needs W+X pages: this setting would crash node at start
      expect(unit.Service?.MemoryDenyWriteExecute).toBeUndefined();
    });

    it(`${name}: the instance key arrives as a credential, the database URL from a root-only env file`, () => {
      expect(one(unit, "Service", "LoadCredential")).toBe("instance_key:/etc/svc/instance.key");
      const env = environment(unit);
      expect(env.SVC_INSTANCE_KEY_FILE).toBe("%d/instance_key");
      expect(env.SVC_CONFIG_DIR).toBe("/etc/svc/config");
      expect(env.SVC_DATABASE_URL).toBeUndefined();
      expect(one(unit, "Service", "EnvironmentFile")).toBe("/etc/svc/svc.env");
    });
  }

  it("the ingress listens on loopback only", () => {
    const env = environment(units["svc-ingress.service"]);
    expect(env.SVC_HOST).toBe("127.0.0.1");
    expect(env.SVC_PORT).toBe("7420");
  });

  it("the worker waits longer than worker.grace_period; it writes its workspaces and the knowledge index, the ingress only the index", () => {
    const worker = units["svc-worker.service"];
    // 30s is worker.grace_period's default; the timeout leaves room for up to 5m
    expect(seconds(one(worker, "Service", "TimeoutStopSec"))).toBeGreaterThan(300);
    const dir = environment(worker).SVC_CONFIG_DIR;
    expect(one(worker, "Service", "ReadWritePaths")).toBe(`${dir}/workspaces -${dir}/data/knowledge`);
    const ingress = units["svc-ingress.service"];
    expect(one(ingress, "Service", "ReadWritePaths")).toBe(
      `-${environment(ingress).SVC_CONFIG_DIR}/data/knowledge`,
    );
  });

  it("the sysusers entry creates the svc user the units name", async () => {
    const text = await readFile(join(SYSTEMD, "svc.sysusers.conf"), "utf8");
    expect(text).toMatch(/^u svc - "[^"]+" \/var\/lib\/svc \/usr\/sbin\/nologin$/m);
  });
});

const systemdAnalyze = findTool("systemd-analyze");
if (!systemdAnalyze) reportMissingTool("systemd-analyze", "systemd-analyze verify deploy/systemd/*.service");

describe.skipIf(!systemdAnalyze)("systemd units (systemd-analyze verify)", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** verify also checks that ExecStart exists; where /usr/bin/node is absent, point it at this node. */
  async function verifiable(name: string): Promise<string> {
    const path = join(SYSTEMD, name);
    const nodeThere = await access("/usr/bin/node").then(
      () => true,
      () => false,
    );
    if (nodeThere) return path;
    process.stderr.write(
      `[deploy] /usr/bin/node is absent: verifying ${name} with ExecStart on ${process.execPath}\n`,
    );
    const dir = await mkdtemp(join(tmpdir(), "svc-systemd-"));
    dirs.push(dir);
    const copy = join(dir, name);
    await writeFile(copy, (await readFile(path, "utf8")).replace("/usr/bin/node ", `${process.execPath} `));
    return copy;
  }

  it("verifies both units with no diagnostics (systemd only warns on bad values, so any output fails)", async () => {
    const paths = await Promise.all(UNITS.map(verifiable));
    const result = runTool(systemdAnalyze!, ["verify", ...paths]);
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("");
    expect(result.status).toBe(0);
  });

  it("would report a broken unit (the check is live)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-systemd-"));
    dirs.push(dir);
    const broken = join(dir, "svc-broken.service");
    const text = await readFile(await verifiable("svc-worker.service"), "utf8");
    await writeFile(broken, text.replace("KillSignal=SIGTERM", "KillSignal=SIGTERMINATE"));
    const result = runTool(systemdAnalyze!, ["verify", broken]);
    expect(result.stderr).toMatch(/signal/i);
  });
});
