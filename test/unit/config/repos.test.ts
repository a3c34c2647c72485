import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { codehostWebBase, defaultCloneUrl, withoutUserinfo } from "../../../shared/config/daemon/repos.ts";
import { loadConfig } from "../../../shared/config/load.ts";

const BASE = `targets:
  local:
    runtime: command
    command: ["cat"]
ask:
  targets: [local]
`;

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function load(extra: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-config-repos-"));
  temps.push(dir);
  await writeFile(join(dir, "daemon.yaml"), BASE + extra);
  return loadConfig({ dir, env: {} });
}

const problems = (result: Awaited<ReturnType<typeof load>>) =>
  result.problems.map((problem) => [problem.path, problem.severity, problem.message]);

/** The one problem of a daemon.yaml whose `repos.acme/widgets.clone_url` is `url`. */
async function cloneUrlProblem(url: string) {
  const result = await load(`repos:\n  acme/widgets:\n    clone_url: ${JSON.stringify(url)}\n`);
  expect(result.ok).toBe(false);
  expect(result.problems).toHaveLength(1);
  return result.problems[0]!;
}

const MUST =
  'daemon.yaml: "repos.acme/widgets.clone_url" must be an https:// or http:// URL, or the file:// URL or absolute path of a local mirror, e.g. clone_url: https://github.com/acme/widgets.git';

describe("repos: in daemon.yaml", () => {
  it("takes an entry without clone_url, empty or null, and clones it from github.com", async () => {
    const result = await load(
      "repos:\n  acme/widgets: {}\n  acme/gadgets:\n  acme/mirror:\n    clone_url: https://git.example.com/acme/mirror.git\n",
    );
    expect(result.problems).toEqual([]);
    expect(result.ok && result.config.repos).toEqual({
      "acme/widgets": { cloneUrl: "https://github.com/acme/widgets.git", configured: false },
      "acme/gadgets": { cloneUrl: "https://github.com/acme/gadgets.git", configured: false },
      "acme/mirror": { cloneUrl: "https://git.example.com/acme/mirror.git", configured: true },
    });
  });

  it("derives the clone URL from codehost.api_url as GitHub Enterprise serves it", async () => {
    const ghe = await load(
      "repos:\n  acme/widgets: {}\ncodehost:\n  api_url: https://ghe.example.com/api/v3\n  token: t\n",
    );
    expect(ghe.ok && ghe.config.repos["acme/widgets"]).toEqual({
      cloneUrl: "https://ghe.example.com/acme/widgets.git",
      configured: false,
    });
    const fake = await load("repos:\n  acme/widgets: {}\ncodehost:\n  api_url: http://127.0.0.1:4567\n");
    expect(fake.ok && fake.config.repos["acme/widgets"]?.cloneUrl).toBe(
      "http://127.0.0.1:4567/acme/widgets.git",
    );
    const github = await load(
      "repos:\n  acme/widgets: {}\ncodehost:\n  api_url: https://api.github.com\n  token: t\n",
    );
    expect(github.ok && github.config.repos["acme/widgets"]?.cloneUrl).toBe(
      "https://github.com/acme/widgets.git",
    );
  });

  it("codehostWebBase strips the API's host or path, and defaultCloneUrl appends <owner>/<name>.git", () => {
    expect(codehostWebBase("https://api.github.com")).toBe("https://github.com");
    expect(codehostWebBase("https://api.github.com/")).toBe("https://github.com");
    expect(codehostWebBase("https://ghe.example.com/api/v3")).toBe("https://ghe.example.com");
    expect(codehostWebBase("https://ghe.example.com/api/v3/")).toBe("https://ghe.example.com");
    expect(codehostWebBase("https://git.example.com/gitea/api")).toBe("https://git.example.com/gitea");
    expect(codehostWebBase("http://127.0.0.1:4567")).toBe("http://127.0.0.1:4567");
    expect(codehostWebBase("http://127.0.0.1:4567/")).toBe("http://127.0.0.1:4567");
    expect(defaultCloneUrl("https://ghe.example.com/api/v3", "acme/widgets")).toBe(
      "https://ghe.example.com/acme/widgets.git",
    );
  });

  it("accepts http(s) URLs, with a user:password too, file:// URLs and absolute paths", async () => {
    const result = await load(
      [
        "repos:",
        "  a/https: { clone_url: https://github.com/a/https.git }",
        "  a/http: { clone_url: http://127.0.0.1:4567/a/http.git }",
        "  a/token: { clone_url: https://x-access-token:ghp_secret@github.com/a/token.git }",
        "  a/file: { clone_url: file:///srv/mirrors/a/file.git }",
        "  a/path: { clone_url: /srv/mirrors/a/path.git }",
        "",
      ].join("\n"),
    );
    expect(result.problems).toEqual([]);
    expect(result.ok && Object.values(result.config.repos)).toEqual([
      { cloneUrl: "https://github.com/a/https.git", configured: true },
      { cloneUrl: "http://127.0.0.1:4567/a/http.git", configured: true },
      // the worker strips the credential and sends it as a header; the loader keeps what was written
      { cloneUrl: "https://x-access-token:ghp_secret@github.com/a/token.git", configured: true },
      { cloneUrl: "file:///srv/mirrors/a/file.git", configured: true },
      { cloneUrl: "/srv/mirrors/a/path.git", configured: true },
    ]);
  });

  it("refuses what git would read as an option, a command or another transport, naming the key", async () => {
    const cases: [string, string][] = [
      ["--upload-pack=touch /tmp/pwned", 'a value starting with "-", which git would read as an option'],
      ["ext::sh -c touch% /tmp/pwned", `git's "ext::" remote helper syntax, which runs a command`],
      ["fd::17", `git's remote helper syntax "fd::"`],
      [
        "ssh://git@github.com/acme/widgets.git",
        "an SSH URL: svc fetches over http(s), as the pipeline's code-host identity",
      ],
      [
        "git@github.com:acme/widgets.git",
        "an SSH address (host:path): svc fetches over http(s), as the pipeline's code-host identity",
      ],
      ["git://github.com/acme/widgets.git", 'a URL of scheme "git:"'],
      ["https:/github.com/acme/widgets.git", "a malformed https:// URL"],
      ["https://", "a malformed https:// URL"],
      ["file://mirror-host/srv/widgets.git", "a file:// URL naming no absolute path on this host"],
      ["widgets.git", "a relative path"],
      [
        "https://github.com/acme/widgets.git\n[core]",
        "a value holding a control character such as a newline",
      ],
    ];
    for (const [url, got] of cases) {
      const problem = await cloneUrlProblem(url);
      expect(problem).toMatchObject({
        path: "repos.acme/widgets.clone_url",
        code: "invalid_value",
        severity: "error",
        message: `${MUST} (got ${got})`,
      });
    }
  });

  it("never echoes a refused URL, so no password pasted into it", async () => {
    const problem = await cloneUrlProblem("ssh://deploy:hunter2@git.example.com/acme/widgets.git");
    expect(problem.message).toBe(
      `${MUST} (got an SSH URL: svc fetches over http(s), as the pipeline's code-host identity)`,
    );
    expect(problem.message).not.toContain("hunter2");
  });

  it("reports a wrong shape, type or key by path", async () => {
    expect(problems(await load("repos:\n  acme/widgets: https://github.com/acme/widgets.git\n"))).toEqual([
      [
        "repos.acme/widgets",
        "error",
        'daemon.yaml: "repos.acme/widgets" must be a mapping, not a string - write { clone_url: https://github.com/acme/widgets.git }, or {} to clone it from the code host',
      ],
    ]);
    expect(problems(await load("repos: [acme/widgets]\n"))).toEqual([
      [
        "repos",
        "error",
        'daemon.yaml: "repos" must be a mapping, not a list - e.g. repos: { acme/widgets: {} }',
      ],
    ]);
    expect(problems(await load("repos:\n  widgets: {}\n"))).toEqual([
      [
        "repos.widgets",
        "error",
        'daemon.yaml: repository key "widgets" must be written <owner>/<name>, e.g. acme/widgets',
      ],
    ]);
    expect(problems(await load("repos:\n  acme/widgets: { clone_url: 42 }\n"))).toEqual([
      [
        "repos.acme/widgets.clone_url",
        "error",
        'daemon.yaml: "repos.acme/widgets.clone_url" must be a string, not a number',
      ],
    ]);
    const unknown = await load("repos:\n  acme/widgets: { cloneUrl: https://github.com/acme/widgets.git }\n");
    expect(unknown.ok).toBe(true);
    expect(problems(unknown)).toEqual([
      [
        "repos.acme/widgets.cloneUrl",
        "warning",
        'daemon.yaml: unknown key "repos.acme/widgets.cloneUrl" is ignored - check its spelling; known keys here: clone_url, auth',
      ],
    ]);
  });

  it("withoutUserinfo drops a user:password, for showing a clone URL", () => {
    expect(withoutUserinfo("https://x-access-token:ghp_secret@github.com/a/b.git")).toBe(
      "https://github.com/a/b.git",
    );
    expect(withoutUserinfo("https://github.com/a/b.git")).toBe("https://github.com/a/b.git");
    expect(withoutUserinfo("/srv/mirrors/a/b.git")).toBe("/srv/mirrors/a/b.git");
  });
});

describe("workspaces.repo_cache in daemon.yaml", () => {
  it("defaults max_size to 20 GiB and reads a size with a unit or in bytes", async () => {
    const none = await load("");
    expect(none.ok && none.config.workspaces.repoCache).toEqual({ maxSizeBytes: 20 * 1024 ** 3 });
    const empty = await load("workspaces:\n  repo_cache: {}\n");
    expect(empty.ok && empty.config.workspaces.repoCache).toEqual({ maxSizeBytes: 20 * 1024 ** 3 });
    const binary = await load("workspaces:\n  repo_cache: { max_size: 500MiB }\n");
    expect(binary.ok && binary.config.workspaces.repoCache).toEqual({ maxSizeBytes: 500 * 1024 ** 2 });
    const decimal = await load("workspaces:\n  repo_cache:\n    max_size: 50GB\n");
    expect(decimal.ok && decimal.config.workspaces.repoCache).toEqual({ maxSizeBytes: 50_000_000_000 });
    const bytes = await load("workspaces:\n  repo_cache: { max_size: 1073741824 }\n");
    expect(bytes.ok && bytes.config.workspaces.repoCache).toEqual({ maxSizeBytes: 1024 ** 3 });
  });

  it("refuses a size below 100MiB or not a size, and warns about unknown keys", async () => {
    const must =
      'daemon.yaml: "workspaces.repo_cache.max_size" must be a size of at least 100MiB such as 20GiB, 500MiB or 21474836480 (bytes)';
    expect(problems(await load("workspaces:\n  repo_cache: { max_size: 10MB }\n"))).toEqual([
      ["workspaces.repo_cache.max_size", "error", `${must} (got "10MB")`],
    ]);
    expect(problems(await load("workspaces:\n  repo_cache: { max_size: 1.5GB }\n"))).toEqual([
      ["workspaces.repo_cache.max_size", "error", `${must} (got "1.5GB")`],
    ]);
    expect(problems(await load("workspaces:\n  repo_cache: { max_size: 4096 }\n"))).toEqual([
      ["workspaces.repo_cache.max_size", "error", `${must} (got "4096")`],
    ]);
    expect(problems(await load("workspaces:\n  repo_cache: 20GiB\n"))).toEqual([
      [
        "workspaces.repo_cache",
        "error",
        'daemon.yaml: "workspaces.repo_cache" must be a mapping, not a string such as { max_size: 20GiB }',
      ],
    ]);
    const unknown = await load("workspaces:\n  repo_cache: { max_size: 20GiB, maxSize: 1GiB }\n");
    expect(unknown.ok).toBe(true);
    expect(problems(unknown)).toEqual([
      [
        "workspaces.repo_cache.maxSize",
        "warning",
        'daemon.yaml: unknown key "workspaces.repo_cache.maxSize" is ignored - check its spelling; known keys here: max_size',
      ],
    ]);
  });
});

describe("repos.<owner>/<name>.auth", () => {
  it("none: fetched anonymously; absent: as the pipeline's identity; anything else is refused", async () => {
    const result = await load("repos:\n  acme/widgets: { auth: none }\n  acme/gadgets: {}\n");
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.repos["acme/widgets"]).toEqual({
      cloneUrl: "https://github.com/acme/widgets.git",
      configured: false,
      auth: "none",
    });
    expect(result.config.repos["acme/gadgets"]?.auth).toBeUndefined();
    const refused = await load("repos:\n  acme/widgets: { auth: anonymous }\n");
    expect(problems(refused)).toEqual([
      [
        "repos.acme/widgets.auth",
        "error",
        'daemon.yaml: "repos.acme/widgets.auth" must be "none" (fetch anonymously), or left out to fetch as the pipeline\'s code-host identity, not "anonymous"',
      ],
    ]);
  });
});
