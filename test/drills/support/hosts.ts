import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readdirSync } from "node:fs";
import { appendFile, chmod, chown, mkdir, readFile, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Host } from "./netns.ts";
import { LOG_DIR, ROOT } from "./processes.ts";

const run = promisify(execFile);

/** A server process run inside a host namespace, with its output kept in LOG_DIR. */
interface Daemon {
  child: ChildProcess;
  exited: Promise<void>;
}

function startDaemon(host: Host, name: string, argv: string[]): Daemon {
  const [command, ...args] = [...host.wrap, ...argv];
  mkdirSync(LOG_DIR, { recursive: true });
  const child = spawn(command!, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", LANG: "C" },
  });
  const log = createWriteStream(join(LOG_DIR, `${name}-${child.pid}.log`));
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const exited = new Promise<void>((resolve) =>
    child.on("close", () => {
      log.end();
      resolve();
    }),
  );
  return { child, exited };
}

async function stopDaemon(
  daemon: Daemon | undefined,
  signal: NodeJS.Signals,
  boundMs: number,
): Promise<void> {
  if (!daemon || daemon.child.exitCode !== null || daemon.child.signalCode !== null) return;
  daemon.child.kill(signal);
  const timer = setTimeout(() => daemon.child.kill("SIGKILL"), boundMs);
  await daemon.exited;
  clearTimeout(timer);
}

/** Resolves once a TCP connection to address:port succeeds; throws after `boundMs`. */
export async function waitForPort(
  address: string,
  port: number,
  what: string,
  boundMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: address, port, timeout: 1_000 });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
      socket.once("timeout", () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} did not accept connections on ${address}:${port}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The newest PostgreSQL server installed by the distribution (/usr/lib/postgresql/<major>/bin). */
export function postgresBinaries(): string | undefined {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const majors = readdirSync(base)
    .filter((name) => existsSync(join(base, name, "bin/postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(base, majors[0], "bin") : undefined;
}

export interface PostgresHost {
  url: string;
  /** fast shutdown (SIGINT), then the same data directory started again; resolves once it accepts connections */
  restart(): Promise<{ downMs: number }>;
  stop(): Promise<void>;
}

/**
 * A PostgreSQL cluster of its own (initdb in `root`), run as the `postgres` user inside `host`,
 * listening on the host's address only; trust authentication for the drill's subnet.
 */
export async function startPostgresHost(host: Host, root: string, subnet: string): Promise<PostgresHost> {
  const bin = postgresBinaries();
  if (!bin) throw new Error("no PostgreSQL server under /usr/lib/postgresql/*/bin");
  const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
  const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
  const data = join(root, "data");
  await chmod(root, 0o755);
  await mkdir(data, { mode: 0o700 });
  await chown(data, uid, gid);
  const asPostgres = ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups"];
  await run(asPostgres[0]!, [
    ...asPostgres.slice(1),
    join(bin, "initdb"),
    "-D",
    data,
    "-U",
    "postgres",
    "--auth=trust",
    "--encoding=UTF8",
    "--locale=C",
  ]);
  await appendFile(join(data, "pg_hba.conf"), `host all all ${subnet}.0/24 trust\n`);
  const argv = [
    ...asPostgres,
    join(bin, "postgres"),
    "-D",
    data,
    "-c",
    `listen_addresses=${host.address}`,
    "-c",
    "port=5432",
    "-c",
    `unix_socket_directories=${data}`,
    "-c",
    "max_connections=300",
  ];
  let daemon = startDaemon(host, "postgres", argv);
  await waitForPort(host.address, 5432, "postgres");
  return {
    url: `postgres://postgres@${host.address}:5432/postgres`,
    async restart() {
      const stopping = Date.now();
      await stopDaemon(daemon, "SIGINT", 30_000);
      daemon = startDaemon(host, "postgres", argv);
      await waitForPort(host.address, 5432, "postgres");
      return { downMs: Date.now() - stopping };
    },
    stop: () => stopDaemon(daemon, "SIGINT", 30_000),
  };
}

export interface NginxHost {
  url: string;
  configFile: string;
  stop(): Promise<void>;
}

/** Top-level `name … { … }` blocks of an nginx file, by brace depth (svc.conf has no braces in strings). */
function topLevelBlocks(text: string): string[] {
  const blocks: string[] = [];
  let depth = 0;
  let start = 0;
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    const code = line.replace(/#.*/, "");
    if (depth === 0 && code.includes("{")) start = i;
    depth += (code.match(/{/g) ?? []).length - (code.match(/}/g) ?? []).length;
    if (depth === 0 && code.includes("}")) blocks.push(lines.slice(start, i + 1).join("\n"));
  }
  return blocks;
}

/**
 * The project's deploy/nginx/svc.conf, adapted only where a drill host must differ: the upstream
 * names the ingress hosts, the TLS server listens in plain HTTP on the nginx host's address (no
 * certificates here), the port-80 redirect is dropped, and svc-proxy.conf is included unchanged
 * from the repository.
 */
export async function nginxConfig(
  listen: string,
  ingresses: string[],
  dir: string,
): Promise<{ text: string; upstreamServers: number }> {
  const source = await readFile(join(ROOT, "deploy/nginx/svc.conf"), "utf8");
  const blocks = topLevelBlocks(source);
  const upstream = blocks.find((b) => b.startsWith("upstream svc_ingress"));
  const tls = blocks.find((b) => b.startsWith("server") && /listen 443/.test(b));
  if (!upstream || !tls)
    throw new Error("deploy/nginx/svc.conf no longer has the upstream and TLS server blocks");
  const serverLine = /^(\s*)server 127\.0\.0\.1:7420(.*)$/m.exec(upstream);
  if (!serverLine) throw new Error("deploy/nginx/svc.conf's upstream no longer names 127.0.0.1:7420");
  const servers = ingresses.map((address) => `${serverLine[1]}server ${address}${serverLine[2]}`).join("\n");
  const server = tls
    .split("\n")
    .filter((line) => !/^\s*(listen|ssl_|server_name)/.test(line))
    .join("\n")
    .replace(/^server \{/, `server {\n    listen ${listen};\n    server_name _;`)
    .replace(/access_log \S+;/, `access_log ${join(dir, "access.log")};`)
    .replaceAll("/etc/nginx/snippets/svc-proxy.conf", join(ROOT, "deploy/nginx/svc-proxy.conf"));
  const text = `# generated by the multi-host drill from deploy/nginx/svc.conf
daemon off;
worker_processes 2;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;
events { worker_connections 2048; }
http {
  client_body_temp_path ${join(dir, "body")};
  proxy_temp_path ${join(dir, "proxy")};
  fastcgi_temp_path ${join(dir, "fastcgi")};
  uwsgi_temp_path ${join(dir, "uwsgi")};
  scgi_temp_path ${join(dir, "scgi")};
${upstream.replace(serverLine[0], servers)}

${server}
}
`;
  return { text, upstreamServers: ingresses.length };
}

export async function startNginxHost(host: Host, ingresses: string[], dir: string): Promise<NginxHost> {
  await mkdir(dir, { recursive: true });
  // nginx's workers run as an unprivileged user and must reach the log and temporary paths
  await chmod(dir, 0o755);
  const configFile = join(dir, "nginx.conf");
  const { text } = await nginxConfig(`${host.address}:8080`, ingresses, dir);
  await writeFile(configFile, text);
  await run(host.wrap[0]!, [
    ...host.wrap.slice(1),
    "nginx",
    "-t",
    "-q",
    "-e",
    join(dir, "error.log"),
    "-c",
    configFile,
  ]).catch((error: { stderr?: string }) => {
    throw new Error(`nginx refuses the generated ${configFile}:\n${error.stderr ?? String(error)}`);
  });
  const daemon = startDaemon(host, "nginx", ["nginx", "-e", join(dir, "error.log"), "-c", configFile]);
  await waitForPort(host.address, 8080, "nginx");
  return {
    url: `http://${host.address}:8080`,
    configFile,
    // QUIT: finish the requests in flight, as `nginx -s quit` does
    stop: () => stopDaemon(daemon, "SIGQUIT", 10_000),
  };
}
