import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Secret, Service } from "kubernetes-models/v1";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { parseDuration } from "../../../shared/config/duration.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { DEPLOY } from "./tools.ts";

const K8S = join(DEPLOY, "kubernetes");

interface Manifest {
  file: string;
  object: Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string } };
}

/** Every Kubernetes object the directory ships (kustomization.yaml is kustomize's, not an object). */
async function manifests(): Promise<Manifest[]> {
  const files = (await readdir(K8S)).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml").sort();
  const out: Manifest[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(join(K8S, file), "utf8"))) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join("; ")}`);
      const object = doc.toJS({ maxAliasCount: 0 }) as Manifest["object"] | null;
      if (object) out.push({ file, object });
    }
  }
  return out;
}

type Model = { validate(): void };
const MODELS: Record<string, (data: never) => Model> = {
  "apps/v1 Deployment": (data) => new Deployment(data),
  "v1 Service": (data) => new Service(data),
  "v1 ConfigMap": (data) => new ConfigMap(data),
  "v1 Secret": (data) => new Secret(data),
  "policy/v1 PodDisruptionBudget": (data) => new PodDisruptionBudget(data),
};

function validate(manifest: Manifest): void {
  const { apiVersion, kind } = manifest.object;
  const make = MODELS[`${apiVersion} ${kind}`];
  if (!make) throw new Error(`${manifest.file}: no schema check for ${apiVersion} ${kind}`);
  try {
    make(manifest.object as never).validate();
  } catch (error) {
    throw new Error(
      `${manifest.file} (${kind} ${manifest.object.metadata.name}): ${(error as Error).message}`,
    );
  }
}

function find(all: Manifest[], kind: string, name: string): Manifest["object"] {
  const found = all.find((m) => m.object.kind === kind && m.object.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found.object;
}

// biome-ignore lint/suspicious/noExplicitAny: manifests are checked field by field below
type Any = any;

function podSpec(deployment: Manifest["object"]): Any {
  return (deployment as Any).spec.template.spec;
}

function container(deployment: Manifest["object"], name: string): Any {
  const found = podSpec(deployment).containers.find((c: Any) => c.name === name);
  if (!found) throw new Error(`${deployment.metadata.name} has no container ${name}`);
  return found;
}

const all = await manifests();
const ingress = find(all, "Deployment", "svc-ingress");
const worker = find(all, "Deployment", "svc-worker");
const configMap = find(all, "ConfigMap", "svc-config") as Any;
const secret = find(all, "Secret", "svc-secrets") as Any;

describe("Kubernetes manifests", () => {
  it("validate against the Kubernetes object schemas", () => {
    expect(all.map((m) => `${m.object.kind}/${m.object.metadata.name}`).sort()).toEqual([
      "ConfigMap/svc-config",
      "Deployment/svc-ingress",
      "Deployment/svc-worker",
      "PodDisruptionBudget/svc-ingress",
      "Secret/svc-secrets",
      "Service/svc-ingress",
    ]);
    for (const manifest of all) validate(manifest);
  });

  it("the schema check is live: a malformed Deployment is refused", () => {
    const broken = structuredClone(ingress) as Any;
    broken.spec.template.spec.containers[0].ports[0].containerPort = "http";
    expect(() => validate({ file: "broken.yaml", object: broken })).toThrow(/containerPort must be integer/);
    const noSelector = structuredClone(worker) as Any;
    delete noSelector.spec.selector;
    expect(() => validate({ file: "broken.yaml", object: noSelector })).toThrow(/selector/);
  });

  it("kustomization lists every object except the example Secret", async () => {
    const text = await readFile(join(K8S, "kustomization.yaml"), "utf8");
    const kustomization = parseAllDocuments(text)[0]!.toJS() as { resources: string[] };
    const shipped = [...new Set(all.map((m) => m.file))].filter((f) => f !== "secret.example.yaml");
    expect([...kustomization.resources].sort()).toEqual(shipped.sort());
  });

  it("the ingress is ready only when /health answers, and drains before it stops", () => {
    const spec = podSpec(ingress);
    const c = container(ingress, "ingress");
    expect(c.args).toEqual(["ingress"]);
    expect(c.readinessProbe.httpGet).toEqual({ path: "/health", port: "http" });
    expect(c.ports).toContainEqual({ name: "http", containerPort: 7420, protocol: "TCP" });
    expect(c.env).toContainEqual({ name: "SVC_HOST", value: "0.0.0.0" });
    // liveness must not follow the database: that would restart every replica during an outage
    expect(c.livenessProbe?.httpGet).toBeUndefined();
    const preStop = c.lifecycle.preStop.exec.command as string[];
    expect(preStop[0]).toBe("sleep");
    const sleepSeconds = Number(preStop[1]);
    expect(sleepSeconds).toBeGreaterThanOrEqual(3);
    // the sleep plus the drain of requests in flight fits in the grace period
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(sleepSeconds + 30);
    expect((ingress as Any).spec.replicas).toBeGreaterThanOrEqual(2);
    expect((ingress as Any).spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
  });

  it("the worker has no HTTP probe and outlasts worker.grace_period", async () => {
    const spec = podSpec(worker);
    const c = container(worker, "worker");
    expect(c.args).toEqual(["worker"]);
    expect(c.ports).toBeUndefined();
    expect(c.readinessProbe).toBeUndefined();
    expect(c.livenessProbe).toBeUndefined();
    const daemon = parseAllDocuments(configMap.data["daemon.yaml"])[0]!.toJS() as Any;
    const graceMs = parseDuration(String(daemon.worker.grace_period));
    expect(graceMs).toBeDefined();
    expect(spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs!);
  });

  it("the Service selects the ingress pods only", () => {
    const service = find(all, "Service", "svc-ingress") as Any;
    const labels = (ingress as Any).spec.template.metadata.labels;
    const workerLabels = (worker as Any).spec.template.metadata.labels;
    const selects = (l: Record<string, string>) =>
      Object.entries(service.spec.selector).every(([k, v]) => l[k] === v);
    expect(selects(labels)).toBe(true);
    expect(selects(workerLabels)).toBe(false);
    expect(service.spec.ports[0].targetPort).toBe("http");
    for (const d of [ingress, worker] as Any[]) {
      expect(d.spec.selector.matchLabels).toEqual(
        Object.fromEntries(
          Object.keys(d.spec.selector.matchLabels).map((k) => [k, d.spec.template.metadata.labels[k]]),
        ),
      );
    }
  });

  for (const [name, deployment] of [
    ["ingress", ingress],
    ["worker", worker],
  ] as const) {
    it(`${name}: non-root, read-only, the instance key from the Secret, .svc/ from the ConfigMap`, () => {
      const spec = podSpec(deployment);
      const c = container(deployment, name);
      expect(spec.securityContext.runAsNonRoot).toBe(true);
      expect(spec.securityContext.runAsUser).toBe(10001);
      for (const each of [...spec.containers, ...spec.initContainers]) {
        expect(each.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        });
      }
      const env = Object.fromEntries(c.env.map((e: Any) => [e.name, e]));
      expect(env.SVC_CONFIG_DIR.value).toBe("/etc/svc");
      expect(env.SVC_DATABASE_URL.valueFrom.secretKeyRef).toEqual({
        name: "svc-secrets",
        key: "database-url",
      });
      // every secret key a pod reads exists in the Secret that docs/operations.md tells operators to create
      for (const e of c.env as Any[]) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) expect(Object.keys(secret.stringData), `${name} env ${e.name}`).toContain(ref.key);
      }
      const volumes = Object.fromEntries(spec.volumes.map((v: Any) => [v.name, v]));
      const mounts = Object.fromEntries(c.volumeMounts.map((m: Any) => [m.mountPath, m]));
      expect(mounts["/etc/svc"]).toMatchObject({ name: "config", readOnly: true });
      expect(volumes["config-src"].configMap.name).toBe("svc-config");
      const keyFile = env.SVC_INSTANCE_KEY_FILE.value as string;
      const keyMount = mounts[keyFile.slice(0, keyFile.lastIndexOf("/"))];
      expect(keyMount.readOnly).toBe(true);
      const keyVolume = volumes[keyMount.name].secret;
      expect(keyVolume.secretName).toBe("svc-secrets");
      expect(keyVolume.items).toEqual([
        { key: "instance.key", path: keyFile.slice(keyFile.lastIndexOf("/") + 1) },
      ]);
      // readable by the svc group (fsGroup), by nobody else
      expect(keyVolume.defaultMode & 0o007).toBe(0);
      expect(Object.keys(secret.stringData)).toContain("instance.key");
    });
  }

  it("both write their knowledge index; only the worker writes <config dir>/workspaces", () => {
    const writable = (d: Manifest["object"], name: string) =>
      container(d, name)
        .volumeMounts.filter((m: Any) => !m.readOnly)
        .map((m: Any) => m.mountPath)
        .sort();
    expect(writable(ingress, "ingress")).toEqual(["/etc/svc/data/knowledge", "/tmp"]);
    expect(writable(worker, "worker")).toEqual(["/etc/svc/data/knowledge", "/etc/svc/workspaces", "/tmp"]);
  });

  it("the example Secret holds placeholders, never a key", () => {
    for (const value of Object.values(secret.stringData) as string[]) expect(value).toMatch(/<[^>]+>/);
    expect(secret.data).toBeUndefined();
  });

  // biome-ignore lint/suspicious/noTemplateCurlyInString: names daemon.yaml's ${VAR} syntax
  it("ConfigMap keys are valid and every ${VAR} of daemon.yaml reaches both pods", () => {
    for (const key of Object.keys(configMap.data)) expect(key).toMatch(/^[-._a-zA-Z0-9]+$/);
    const vars = [...String(configMap.data["daemon.yaml"]).matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]);
    expect(vars.length).toBeGreaterThan(0);
    for (const [name, d] of [
      ["ingress", ingress],
      ["worker", worker],
    ] as const) {
      const names = container(d, name).env.map((e: Any) => e.name);
      for (const v of vars) expect(names, `${name} lacks ${v}`).toContain(v);
    }
  });
});

describe("the config init container", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** Lays the ConfigMap out the way the kubelet does (key symlinks into ..data) and runs the script. */
  async function runInit(data: Record<string, string>) {
    const base = await mkdtemp(join(tmpdir(), "svc-k8s-init-"));
    dirs.push(base);
    const src = join(base, "config-src");
    const dest = join(base, "etc-svc");
    const payload = join(src, "..2026_01_01_00_00_00.000000000");
    await mkdir(payload, { recursive: true });
    await mkdir(dest);
    await symlink("..2026_01_01_00_00_00.000000000", join(src, "..data"));
    for (const [key, value] of Object.entries(data)) {
      await writeFile(join(payload, key), value);
      await symlink(join("..data", key), join(src, key));
    }
    const init = podSpec(ingress).initContainers[0];
    expect(init.command.slice(0, 2)).toEqual(["sh", "-c"]);
    expect(podSpec(worker).initContainers[0].command).toEqual(init.command);
    const result = spawnSync("sh", ["-c", init.command[2]], {
      env: { PATH: process.env.PATH, SRC: src, DEST: dest },
      encoding: "utf8",
    });
    return { dest, status: result.status, stderr: result.stderr };
  }

  it("rebuilds the .svc/ tree, which loads as a valid configuration", async () => {
    const { dest, status, stderr } = await runInit(configMap.data);
    expect(stderr).toBe("");
    expect(status).toBe(0);
    expect(await readFile(join(dest, "pipelines", "deploy-notes.yaml"), "utf8")).toBe(
      configMap.data["pipelines__deploy-notes.yaml"],
    );
    expect(await readFile(join(dest, "agents", "releaser", "PERSONA.md"), "utf8")).toBe(
      configMap.data["agents__releaser__PERSONA.md"],
    );
    expect((await readdir(join(dest, "workspaces"))).length).toBe(0);
    expect(await readdir(dest)).not.toContain("..data");

    const result = await loadConfig({ dir: dest, env: { DEPLOY_HOOK_TOKEN: "test-token" } });
    const errors = result.problems.filter((p) => p.severity === "error");
    expect(errors).toEqual([]);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(Object.keys(result.config.webhooks.sources)).toEqual(["deploy-hook"]);
      expect(result.config.pipelines["deploy-notes"]?.trigger?.webhook).toEqual(["deploy-hook"]);
      expect(result.config.worker.graceMs).toBe(300_000);
    }
  });

  it("refuses a key that would escape the configuration directory", async () => {
    // (Kubernetes itself refuses keys that start with "..", the kubelet's own entries)
    for (const key of ["pipelines__..__..__escape.yaml", "__etc__passwd", "a__.__b"]) {
      const { dest, status, stderr } = await runInit({ [key]: "x" });
      expect(status, key).not.toBe(0);
      expect(stderr).toContain(`refusing key ${key}`);
      expect(await readdir(dest)).toEqual([]);
    }
  });
});
