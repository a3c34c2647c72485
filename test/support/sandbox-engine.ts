import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { access, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type Docker from "dockerode";
import { followProgress, openEngine } from "../../shared/sandbox/engine.ts";
import { buildImage } from "../../shared/sandbox/images.ts";
import { freePort } from "./free-port.ts";

const run = promisify(execFile);

// dockerd and runc live in the sbin directories, which a minimal PATH (cron, a CI runner) may lack
for (const dir of ["/usr/sbin", "/sbin"])
  if (!(process.env.PATH ?? "").split(":").includes(dir))
    process.env.PATH = `${process.env.PATH ?? ""}:${dir}`;
const REPO = join(import.meta.dirname, "..", "..");
const PACKAGES = { dockerd: "docker.io", "docker-registry": "docker-registry", mmdebstrap: "mmdebstrap" };
/** What the base image holds besides Debian's essentials: what a `node:24-bookworm-slim` user would find. */
const BASE_INCLUDE = "ca-certificates,git,ripgrep,passwd";
const HOST_CAS = "/usr/local/share/ca-certificates";

/** Why the engine suite cannot run on this machine, or undefined when it can (it installs what is missing). */
export function engineSuiteUnavailable(): string | undefined {
  if (process.getuid?.() !== 0)
    return "the sandbox suite starts dockerd, which needs root; run the tests as root (CI on this machine does)";
  return undefined;
}

/**
 * Cached between runs on one machine, outside the repository (a clean clone must not throw it
 * away): the mmdebstrap rootfs and the built images, each keyed by everything that went into it,
 * so a changed Dockerfile, pin or apt source builds anew.
 */
export function imageCacheDir(): string {
  return process.env.SVC_SANDBOX_IMAGE_CACHE ?? "/var/tmp/svc-sandbox-images";
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false; // absent: the caller makes it
  }
}

async function onPath(command: string): Promise<boolean> {
  return run("sh", ["-c", `command -v ${command}`]).then(
    () => true,
    () => false, // not installed
  );
}

/** Debian's docker.io, docker-registry and mmdebstrap, installed with apt-get when one is missing. */
export async function ensureEnginePackages(): Promise<void> {
  const missing: string[] = [];
  for (const [command, name] of Object.entries(PACKAGES)) if (!(await onPath(command))) missing.push(name);
  if (missing.length === 0) return;
  if (!(await onPath("apt-get")))
    throw new Error(
      `the sandbox suite needs the Debian packages ${missing.join(", ")} and this machine has no apt-get`,
    );
  const apt = (args: string[]) =>
    run("apt-get", args, {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  try {
    // stale package lists name versions the mirror no longer has: refreshed once, then retried
    await apt(["install", "-y", "--no-install-recommends", ...missing]).catch(async () => {
      await apt(["update"]);
      await apt(["install", "-y", "--no-install-recommends", ...missing]);
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`apt-get install ${missing.join(" ")} failed: ${stderr?.trim() || message}`);
  }
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

/** dockerd leaves its network namespace mounted under its exec root: unmounted before removal. */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readFile("/proc/self/mounts", "utf8"))
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .filter((path) => path.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const path of mounts) await run("umount", [path]).catch(() => run("umount", ["-l", path]));
}

export interface TestEngine {
  /** the loopback registry's storage */
  registryRoot: string;
  socket: string;
  docker: Docker;
  /** `127.0.0.1:<port>`: the loopback registry */
  registryHost: string;
  stop(): Promise<void>;
}

/**
 * A real dockerd in a temporary directory (no bridge, no iptables: containers get no network
 * unless they share the host's, and nothing on the machine is reconfigured) and a Debian
 * docker-registry on a loopback port. Both are stopped, and their directories removed, by stop().
 */
export async function startTestEngine(registryRoot?: string): Promise<TestEngine> {
  // short: the sockets under it must fit in a unix socket path
  const dir = await mkdtemp("/tmp/svc-dd-");
  const socket = join(dir, "docker.sock");
  const dockerd = spawn(
    "dockerd",
    [
      ...["--data-root", join(dir, "root"), "--exec-root", join(dir, "exec")],
      ...["--pidfile", join(dir, "dockerd.pid"), "--host", `unix://${socket}`],
      "--iptables=false",
      "--ip-masq=false",
      "--bridge=none",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let dockerdLog = "";
  dockerd.stderr!.on("data", (chunk: Buffer) => {
    dockerdLog = (dockerdLog + chunk.toString()).slice(-4000);
  });
  const registryPort = await freePort();
  const registryDir = registryRoot ?? join(dir, "registry");
  await mkdir(registryDir, { recursive: true });
  await writeFile(
    join(dir, "registry.yml"),
    `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${registryDir}\nhttp:\n  addr: 127.0.0.1:${registryPort}\n`,
  );
  const registry = spawn("docker-registry", ["serve", join(dir, "registry.yml")], { stdio: "ignore" });
  const docker = openEngine({ socket });
  const stop = async () => {
    registry.kill("SIGTERM");
    dockerd.kill("SIGTERM");
    await Promise.all([exitOf(registry), exitOf(dockerd)]);
    await unmountUnder(dir);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await until(
      () => docker.ping().then(() => true),
      `dockerd to answer on ${socket}`,
      () => dockerdLog,
    );
    await until(
      () => fetch(`http://127.0.0.1:${registryPort}/v2/`).then((response) => response.ok),
      "the registry to answer",
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { registryRoot: registryDir, socket, docker, registryHost: `127.0.0.1:${registryPort}`, stop };
}

async function until(probe: () => Promise<boolean>, what: string, detail = () => ""): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`gave up waiting for ${what}\n${detail()}`);
}

async function hashOf(parts: (string | Buffer)[]): Promise<string> {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\0");
  return hash.digest("hex").slice(0, 16);
}

async function hostCas(): Promise<{ name: string; text: string }[]> {
  const names = (await readdir(HOST_CAS).catch(() => [] as string[])).filter((name) => name.endsWith(".crt"));
  return Promise.all(
    names.sort().map(async (name) => ({ name, text: await readFile(join(HOST_CAS, name), "utf8") })),
  );
}

/**
 * The base image the tests build the agent image on, made as a site without Docker Hub would:
 * a Debian rootfs from this machine's own apt sources (mmdebstrap), with the Node 24 that runs the
 * tests and its npm, and the machine's own CA certificates (so npm trusts what the host trusts).
 */
const SOURCES = "/etc/apt/sources.list.d/debian.sources";

async function baseKey(): Promise<string> {
  return hashOf([
    BASE_INCLUDE,
    await readFile(SOURCES),
    process.version,
    (await run("npm", ["--version"])).stdout,
    ...(await hostCas()).map((ca) => ca.text),
  ]);
}

async function baseRootfs(): Promise<string> {
  const node = process.execPath;
  const npm = (await run("sh", ["-c", "dirname $(dirname $(readlink -f $(command -v npm)))"])).stdout.trim();
  const sources = SOURCES;
  const cas = await hostCas();
  const key = await baseKey();
  const tarball = join(imageCacheDir(), `base-${key}.tar`);
  if (await exists(tarball)) return tarball;
  await mkdir(imageCacheDir(), { recursive: true });
  const partial = tarball.replace(/\.tar$/, `.partial-${process.pid}.tar`);
  const hooks = [
    `install -m 0755 ${node} "$1/usr/local/bin/node"`,
    `mkdir -p "$1/usr/local/lib/node_modules" && cp -a ${npm} "$1/usr/local/lib/node_modules/npm" && ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"`,
    ...(cas.length
      ? [
          `cp ${cas.map((ca) => join(HOST_CAS, ca.name)).join(" ")} "$1/usr/local/share/ca-certificates/" && chroot "$1" update-ca-certificates`,
        ]
      : []),
  ];
  try {
    await run(
      "mmdebstrap",
      [
        "--variant=apt",
        "--format=tar",
        `--include=${BASE_INCLUDE}`,
        ...["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*"].map(
          (path) => `--dpkgopt=path-exclude=${path}`,
        ),
        ...hooks.map((hook) => `--customize-hook=${hook}`),
        "bookworm",
        partial,
        sources,
      ],
      { timeout: 900_000, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, TMPDIR: imageCacheDir() } },
    );
  } catch (error) {
    await rm(partial, { force: true });
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`mmdebstrap failed: ${(stderr ?? "").slice(-3000) || message}`);
  }
  await rename(partial, tarball);
  return tarball;
}

/**
 * The project's agent and studio images, built from deploy/images on the mmdebstrap base (the
 * builds reach the apt mirror and npm through the host's network; the runs never do). Not cached
 * themselves: the registry they are pushed to is (see projectImagesKey).
 */
export async function buildProjectImages(docker: Docker, log: (line: string) => void): Promise<void> {
  const rootfs = await baseRootfs();
  const base = "svc-test-base:bookworm";
  await followProgress(
    docker,
    await docker.importImage(createReadStream(rootfs), { repo: "svc-test-base", tag: "bookworm" }),
    log,
  );
  const images = join(REPO, "deploy", "images");
  const build = { networkmode: "host" };
  await buildImage(docker, join(images, "agent"), "agent:default", log, {
    ...build,
    buildargs: { BASE_IMAGE: base },
  });
  await buildImage(docker, join(images, "studio"), "studio:default", log, {
    ...build,
    buildargs: { BASE_IMAGE: "agent:default" },
  });
}

/**
 * The key of everything the pushed images are made of: the base's inputs, both Dockerfiles and the
 * CLI pins. The loopback registry's storage is cached under it: a run that finds it pushes nothing.
 */
export async function projectImagesKey(): Promise<string> {
  const images = join(REPO, "deploy", "images");
  return hashOf([
    await baseKey(),
    await readFile(join(images, "agent", "Dockerfile")),
    await readFile(join(images, "agent", "versions.json")),
    await readFile(join(images, "studio", "Dockerfile")),
  ]);
}

/** `docker push <registry>/<path>` of a local image under a new name. */
export async function pushAs(docker: Docker, image: string, reference: string): Promise<void> {
  const colon = reference.lastIndexOf(":");
  await docker.getImage(image).tag({ repo: reference.slice(0, colon), tag: reference.slice(colon + 1) });
  // the engine wants an X-Registry-Auth header on every push, even to a registry without auth
  const authconfig = { username: "", password: "", serveraddress: reference.split("/")[0]! };
  await followProgress(docker, await docker.getImage(reference).push({ authconfig }), () => {});
}

/**
 * A second loopback registry over the same storage that wants a login (htpasswd, bcrypt): what
 * `sandboxes.registry_auth` is for. Returns its `127.0.0.1:<port>` and how to stop it.
 */
export async function startAuthRegistry(
  root: string,
  user: { username: string; password: string },
): Promise<{ host: string; stop(): Promise<void> }> {
  const dir = await mkdtemp("/tmp/svc-reg-");
  const port = await freePort();
  // bcrypt is the only hash the registry's htpasswd accepts; Debian's python3 makes one without extra packages
  const hash = (
    await run("python3", [
      "-c",
      "import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))",
      user.password,
    ])
  ).stdout.trim();
  await writeFile(join(dir, "htpasswd"), `${user.username}:${hash}\n`);
  await writeFile(
    join(dir, "registry.yml"),
    `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${root}\nauth:\n  htpasswd:\n    realm: svc-test\n    path: ${join(dir, "htpasswd")}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const registry = spawn("docker-registry", ["serve", join(dir, "registry.yml")], { stdio: "ignore" });
  await until(
    () => fetch(`http://127.0.0.1:${port}/v2/`).then((response) => response.status === 401),
    "the registry with a login to answer",
  );
  return {
    host: `127.0.0.1:${port}`,
    stop: async () => {
      registry.kill("SIGTERM");
      await exitOf(registry);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A test engine whose loopback registry holds the project's images (`<registry>/agent:default`,
 * `studio:default`, and `agent:gpu` as a variant), built once per machine and cached by what they
 * are made of (projectImagesKey). The engine itself starts with no image: a suite pulls what it needs.
 */
export async function startEngineWithImages(): Promise<{
  engine: TestEngine;
  registry: string;
  cached: boolean;
}> {
  await ensureEnginePackages();
  // the registry's storage after the pushes below is cached, keyed by what the images are made of
  const cachedRoot = join(imageCacheDir(), `registry-${await projectImagesKey()}`);
  const cached = await exists(cachedRoot);
  const engine = await startTestEngine(cached ? cachedRoot : undefined);
  const registry = `${engine.registryHost}/svc`;
  if (!cached) {
    await buildProjectImages(engine.docker, () => {});
    await pushAs(engine.docker, "agent:default", `${registry}/agent:default`);
    await pushAs(engine.docker, "studio:default", `${registry}/studio:default`);
    // a variant in the same registry: `svc image pull` must leave it there
    await pushAs(engine.docker, "agent:default", `${registry}/agent:gpu`);
    const partial = `${cachedRoot}.partial-${process.pid}`;
    await run("cp", ["-a", engine.registryRoot, partial]);
    await rename(partial, cachedRoot).catch(async (error: NodeJS.ErrnoException) => {
      // suites in other processes build the same images on a machine's first run: the first
      // rename wins, and its copy holds the same images as this one
      if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
      await rm(partial, { recursive: true, force: true });
    });
  }
  for (const image of await engine.docker.listImages())
    for (const tag of image.RepoTags ?? []) await engine.docker.getImage(tag).remove();
  return { engine, registry, cached };
}

/** `docker pull <registry>/<name>` tagged `<name>`: what `svc image pull` leaves on a host. */
export async function pullTagged(engine: TestEngine, registry: string, name: string): Promise<void> {
  const reference = `${registry}/${name}`;
  const authconfig = { username: "", password: "", serveraddress: reference.split("/")[0]! };
  await followProgress(engine.docker, await engine.docker.pull(reference, { authconfig }), () => {});
  const colon = name.lastIndexOf(":");
  await engine.docker.getImage(reference).tag({ repo: name.slice(0, colon), tag: name.slice(colon + 1) });
}

/**
 * An image without node or anything of svc's: Debian's static busybox (a shell, wget, coreutils)
 * alone on an empty root, tagged `tag`. The binary comes from this machine's apt sources
 * (`apt-get download busybox-static`) and is cached beside the other images; the build needs no
 * network and no base image.
 */
export async function buildBusyboxImage(docker: Docker, tag: string): Promise<void> {
  const binary = join(imageCacheDir(), "busybox-static");
  if (!(await exists(binary))) {
    await mkdir(imageCacheDir(), { recursive: true });
    const work = await mkdtemp(join(imageCacheDir(), "busybox-"));
    try {
      const download = () => run("apt-get", ["download", "busybox-static"], { cwd: work, timeout: 300_000 });
      // stale package lists name versions the mirror no longer has: refreshed once, then retried
      await download().catch(async () => {
        await run("apt-get", ["update"], { timeout: 600_000, maxBuffer: 64 * 1024 * 1024 });
        await download();
      });
      const deb = (await readdir(work)).find((name) => name.endsWith(".deb"));
      if (!deb) throw new Error("apt-get download busybox-static left no .deb");
      await run("dpkg-deb", ["-x", join(work, deb), join(work, "root")]);
      await rename(join(work, "root", "bin", "busybox"), binary);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  const context = await mkdtemp("/tmp/svc-busybox-");
  try {
    await run("cp", [binary, join(context, "busybox")]);
    await writeFile(
      join(context, "Dockerfile"),
      'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\nUSER 1000:1000\n',
    );
    await buildImage(docker, context, tag, () => {}, { networkmode: "none" });
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}
