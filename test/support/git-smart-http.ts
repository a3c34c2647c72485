import { execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

/**
 * A git host on loopback that answers git as github.com does, through the real `git http-backend`:
 * smart HTTP (protocol v2), every commit reachable from a ref served by its id, `refs/pull/<n>/head`
 * as a repository's own refs (a fork's pull request exists only there), private repositories that
 * answer only to `x-access-token:<token>` over Basic auth (401 with GitHub's challenge and body
 * otherwise; 404 "Repository not found." for a token that cannot see them), pushes refused. Each
 * request is recorded with the bytes it sent and received; a bandwidth limit paces what it sends.
 */
export interface GitRequest {
  method: string;
  repo: string;
  service: string;
  status: number;
  /** the token of its Basic credential, if any */
  token?: string;
  bytesIn: number;
  bytesOut: number;
}

export interface GitHostOptions {
  /**
   * Whether `token` may read `repo`: true, false (a valid token that cannot see the repository:
   * 404), or "unknown" (not a token of this host: 401)
   */
  authorize?(token: string, repo: string): boolean | "unknown";
  /** response bytes per second; unlimited when absent (a test may change it between requests) */
  bytesPerSecond?: number;
  /** the Basic user name a token comes with: GitHub's x-access-token (default), GitLab's oauth2 */
  user?: string;
}

export interface GitHost {
  /** where the bare repositories live: `<root>/<owner>/<name>.git` */
  root: string;
  requests: GitRequest[];
  /** makes an empty bare repository `owner/name`; its path */
  createRepo(fullName: string, options?: { private?: boolean }): string;
  /** the bare repository's path, to push to by file system */
  pathOf(fullName: string): string;
  /** `POST .../git-upload-pack` requests (fetch rounds), of one repository or all */
  uploadPacks(repo?: string): GitRequest[];
  /** bytes sent to clients, of one repository or all */
  bytesServed(repo?: string): number;
  /** the responses' pace from now on: bytes per second, or undefined for none */
  pace(bytesPerSecond: number | undefined): void;
  /** answers `req` when it is a git request (true), else leaves it untouched (false) */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  close(): void;
}

const GIT_PATH =
  /^\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;

export function gitHost(given: GitHostOptions = {}): GitHost {
  const options = { ...given };
  const root = mkdtempSync(join(tmpdir(), "svc-git-host-"));
  const home = mkdtempSync(join(tmpdir(), "svc-git-host-home-"));
  const privateRepos = new Set<string>();
  const requests: GitRequest[] = [];
  const execPath = execFileSync("git", ["--exec-path"]).toString().trim();
  const pathOf = (fullName: string) => join(root, `${fullName}.git`);

  const refuse = (
    res: ServerResponse,
    status: number,
    body: string,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers });
    res.end(body);
  };

  const user = given.user ?? "x-access-token";
  /** The token of a Basic credential whose user is the host's (`user`); "" for another user; undefined for none. */
  const tokenOf = (req: IncomingMessage): string | undefined => {
    const basic = /^basic (.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    if (!basic) return undefined;
    const decoded = Buffer.from(basic, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0 || decoded.slice(0, colon) !== user) return "";
    return decoded.slice(colon + 1);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://git");
    const match = GIT_PATH.exec(url.pathname);
    if (!match) return false;
    const repo = `${match[1]}/${match[2]}`;
    const service = match[3] === "info/refs" ? (url.searchParams.get("service") ?? "dumb") : match[3]!;
    const record: GitRequest = {
      method: req.method ?? "GET",
      repo,
      service,
      status: 0,
      bytesIn: 0,
      bytesOut: 0,
    };
    const token = tokenOf(req);
    if (token) record.token = token;
    requests.push(record);
    const answer = (status: number, body: string, headers?: Record<string, string>) => {
      record.status = status;
      refuse(res, status, body, headers);
    };
    if (service.endsWith("receive-pack")) {
      answer(403, "Write access to repository not granted.\n");
      return true;
    }
    if (service !== "git-upload-pack") {
      answer(403, "Please upgrade your git client.\n");
      return true;
    }
    // what GitHub answers: a missing repository and one the caller may not see look the same
    const exists = existsSync(join(pathOf(repo), "HEAD"));
    const challenge = { "www-authenticate": 'Basic realm="GitHub"' };
    const verdict = token ? (options.authorize?.(token, repo) ?? "unknown") : undefined;
    if (token === "" || verdict === "unknown") {
      answer(
        401,
        "Invalid username or token. Password authentication is not supported for Git operations.\n",
        challenge,
      );
      return true;
    }
    if (privateRepos.has(repo) && token === undefined) {
      answer(401, "", challenge);
      return true;
    }
    if (!exists || (privateRepos.has(repo) && verdict === false)) {
      answer(404, "Repository not found.\n");
      return true;
    }
    if (req.method === "POST") void negotiate(req, res, record, repo, url);
    else runBackend(req, res, record, repo, url, undefined);
    return true;
  };

  /**
   * A fetch's negotiation, read whole first: git's upload-pack of protocol v2 hands out any object
   * its repository holds, where github.com serves only commits some ref reaches. A wanted commit no
   * ref contains is refused as git refuses it ("not our ref"); trees and blobs pass (a partial
   * clone asks for those by id).
   */
  const negotiate = async (
    req: IncomingMessage,
    res: ServerResponse,
    record: GitRequest,
    repo: string,
    url: URL,
  ) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    record.bytesIn = body.length;
    const text = (req.headers["content-encoding"] === "gzip" ? gunzipSync(body) : body).toString("latin1");
    for (const [, want] of text.matchAll(/want ([0-9a-f]{40})/g)) {
      if (await unreachableCommit(pathOf(repo), want!)) {
        const line = `ERR upload-pack: not our ref ${want}\n`;
        record.status = 200;
        res.writeHead(200, { "content-type": "application/x-git-upload-pack-result" });
        res.end(`${(line.length + 4).toString(16).padStart(4, "0")}${line}`);
        return;
      }
    }
    runBackend(req, res, record, repo, url, body);
  };

  const runBackend = (
    req: IncomingMessage,
    res: ServerResponse,
    record: GitRequest,
    repo: string,
    url: URL,
    body: Buffer | undefined,
  ) => {
    const child = spawn(join(execPath, "git-http-backend"), [], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: home,
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        // github.com serves any commit reachable from a ref by its id, and partial clones
        GIT_CONFIG_COUNT: "2",
        GIT_CONFIG_KEY_0: "uploadpack.allowReachableSHA1InWant",
        GIT_CONFIG_VALUE_0: "true",
        GIT_CONFIG_KEY_1: "uploadpack.allowFilter",
        GIT_CONFIG_VALUE_1: "true",
        REQUEST_METHOD: req.method ?? "GET",
        PATH_INFO: `/${repo}.git/${url.pathname.endsWith("/info/refs") ? "info/refs" : "git-upload-pack"}`,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
        ...(req.headers["content-encoding"]
          ? { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] }
          : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
        REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
        ...(record.token ? { REMOTE_USER: user } : {}),
      },
      stdio: ["pipe", "pipe", "pipe"],
      // its own process group: the upload-pack and pack-objects it starts die with it
      detached: true,
    });
    if (body) child.stdin.end(body);
    else {
      req.on("data", (chunk: Buffer) => {
        record.bytesIn += chunk.length;
      });
      req.pipe(child.stdin);
    }
    res.on("close", () => {
      if (child.exitCode !== null || child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // the group is gone already: nothing left to end
      }
    });
    child.stderr.resume();
    let head = Buffer.alloc(0);
    let headersSent = false;
    let writing = Promise.resolve();
    const clock = { start: performance.now(), sent: 0 };
    const send = (chunk: Buffer) => {
      record.bytesOut += chunk.length;
      writing = writing.then(() => paced(res, chunk, options.bytesPerSecond, clock));
    };
    child.stdout.on("data", (chunk: Buffer) => {
      if (headersSent) return send(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === "status") status = Number.parseInt(value, 10);
        else if (name) headers[name] = value;
      }
      record.status = status;
      res.writeHead(status, headers);
      headersSent = true;
      const rest = head.subarray(end + 4);
      if (rest.length > 0) send(rest);
    });
    child.on("close", () => {
      void writing.then(() => {
        if (!headersSent) {
          record.status = 500;
          res.writeHead(500);
        }
        res.end();
      });
    });
  };

  return {
    root,
    requests,
    createRepo(fullName, repoOptions = {}) {
      const path = pathOf(fullName);
      mkdirSync(join(path, ".."), { recursive: true });
      execFileSync("git", ["init", "--quiet", "--bare", "--initial-branch=main", path], {
        env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: "1" },
      });
      if (repoOptions.private) privateRepos.add(fullName);
      return path;
    },
    pathOf,
    pace(bytesPerSecond) {
      options.bytesPerSecond = bytesPerSecond;
    },
    uploadPacks: (repo) =>
      requests.filter(
        (r) => r.method === "POST" && r.service === "git-upload-pack" && (!repo || r.repo === repo),
      ),
    bytesServed: (repo) =>
      requests.filter((r) => !repo || r.repo === repo).reduce((sum, r) => sum + r.bytesOut, 0),
    handle,
    close() {
      rmSync(root, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** A commit of the repository that no ref contains; false for other objects and for what it lacks (git answers those itself). */
function unreachableCommit(bare: string, oid: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(
      "git",
      ["--git-dir", bare, "for-each-ref", "--count=1", "--format=%(refname)", "--contains", oid],
      { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1" } },
      (error, stdout) => resolve(!error && stdout.trim() === ""),
    );
  });
}

/**
 * Writes `chunk`, at most `bytesPerSecond` on average over the response: each 16 KiB slice waits
 * until the response's start plus what was sent so far at that rate (a timer per slice alone would
 * cap the rate at a slice a millisecond, whatever the setting).
 */
async function paced(
  res: ServerResponse,
  chunk: Buffer,
  bytesPerSecond: number | undefined,
  clock: { start: number; sent: number },
): Promise<void> {
  if (!bytesPerSecond) {
    if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
    return;
  }
  for (let offset = 0; offset < chunk.length; offset += 16_384) {
    const slice = chunk.subarray(offset, offset + 16_384);
    if (!res.write(slice)) await new Promise((resolve) => res.once("drain", resolve));
    clock.sent += slice.length;
    const due = clock.start + (clock.sent / bytesPerSecond) * 1000;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** A git host listening on its own loopback port. */
export async function startGitHost(options: GitHostOptions = {}): Promise<GitHost & { url: string }> {
  const host = gitHost(options);
  const server: Server = createServer((req, res) => {
    if (!host.handle(req, res)) refuseUnknown(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...host,
    url: `http://127.0.0.1:${port}`,
    close() {
      server.closeAllConnections();
      server.close();
      host.close();
    },
  };
}

function refuseUnknown(res: ServerResponse): void {
  res.writeHead(404, { "content-type": "text/plain" });
  res.end("Not Found\n");
}
