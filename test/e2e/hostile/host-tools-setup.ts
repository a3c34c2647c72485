import { mkdir, readFile, realpath, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parse, stringify } from "yaml";
import { testGit } from "../../support/git.ts";
import { baseFiles, EXECUTABLES } from "../worker/config-fixture.ts";
import { writeConfigDir } from "../worker/processes.ts";

const ROOT = join(import.meta.dirname, "../../..");

/** What a file outside the worktree holds; no tool answer, log or result may ever carry it. */
export const HOST_SECRET = "host-secret-7f3a9c1e-never-leaves-the-host";

/**
 * The agent: the pull request's side of the conversation. It makes the tool calls the delivery's
 * payload lists, over the tool protocol with its run token as any agent CLI would, and answers with
 * what each call got back and its own view of WORKTREE.
 */
const PROBE_AGENT = `#!/usr/bin/env node
const { realpathSync } = require("node:fs");
const { calls } = JSON.parse(process.env.PAYLOAD_JSON);
async function call(name, args, id) {
  const response = await fetch(process.env.SVC_MCP_URL, {
    method: "POST",
    headers: {
      authorization: "Bearer " + process.env.SVC_MCP_TOKEN,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }),
  });
  const answer = await response.json();
  if (answer.error) return { tool: name, rpcError: answer.error };
  const result = answer.result;
  return {
    tool: name,
    isError: result.isError === true,
    text: result.content.map((part) => part.text).join(""),
    structured: result.structuredContent ?? null,
  };
}
(async () => {
  const outcomes = [];
  for (const [index, entry] of calls.entries()) outcomes.push(await call(entry.tool, entry.arguments, index + 1));
  console.log(JSON.stringify({ worktree: realpathSync(process.env.WORKTREE), calls: outcomes }));
})().catch((error) => {
  console.error(String(error));
  process.exit(3);
});
`;

/** An operator's wrapper around /bin/ls that leaves a marker: proof of whether ls ran at all. */
const LIST_TOOL = `#!/bin/sh
printf '%s\\n' "$*" >> "$MARKER"
exec /bin/ls "$@"
`;

/** Records the argument it was given, then prints that file. */
const SHOW_TOOL = `#!/bin/sh
printf '%s\\n' "$1" >> "$MARKER"
exec /bin/cat "$1"
`;

/** What a tool sees: its working directory, what is in it, WORKTREE and PATH. */
const WHERE_TOOL = `#!/bin/sh
pwd; echo --; ls -A; echo --; echo "$WORKTREE"; echo --; echo "$PATH"
`;

/** An operator's script that lints inside the worktree, running the linter by name. */
const IN_WORKTREE_TOOL = `#!/bin/sh
cd "$WORKTREE" && exec pr-lint
`;

export interface HostileRepo {
  bare: string;
  sha: string;
}

/**
 * The pull request: a repository whose `node_modules/.bin` holds scripts named like the tools a
 * host tool might run (each leaves a marker when it runs), a link to a secret file outside the
 * checkout, a link to the checkout's parent and one to the secret's directory.
 */
export async function hostileRepo(base: string, markers: string, secretFile: string): Promise<HostileRepo> {
  const seed = join(base, "seed");
  const bin = join(seed, "node_modules", ".bin");
  await mkdir(bin, { recursive: true });
  await mkdir(join(seed, "src"));
  for (const name of ["pr-lint", "biome"]) {
    await writeFile(join(bin, name), `#!/bin/sh\necho "$0 $*" >> ${join(markers, "checkout-script-ran")}\n`, {
      mode: 0o755,
    });
  }
  await writeFile(join(seed, ".npmrc"), "offline=false\n");
  await writeFile(join(seed, "src", "ok.txt"), "inside the worktree\n");
  await writeFile(join(seed, "src", "bad.js"), "let a = 1\nif (a == 2) { debugger }\n");
  await symlink(secretFile, join(seed, "leak"));
  await symlink("..", join(seed, "up"));
  await symlink(dirname(secretFile), join(seed, "outside"));
  const git = testGit(base, { name: "stranger", email: "s@e" });
  git(["init", "--quiet", "--initial-branch=main", seed]);
  git(["add", "--all", "--force"], seed);
  git(["commit", "--quiet", "-m", "a pull request"], seed);
  const sha = git(["rev-parse", "HEAD"], seed);
  const bare = join(base, "hostile.git");
  git(["clone", "--quiet", "--bare", seed, bare]);
  return { bare, sha };
}

/**
 * `host_tools.lint` exactly as examples/reference/.svc/daemon.yaml declares it, its `exec` pointed
 * at this install's own biome (the example's /usr/local/bin/biome is the operator's global install).
 */
export async function referenceLintTool(): Promise<Record<string, unknown>> {
  const example = parse(await readFile(join(ROOT, "examples/reference/.svc/daemon.yaml"), "utf8")) as {
    host_tools: { lint: Record<string, unknown> };
  };
  const lint = example.host_tools.lint;
  if (lint.exec !== "/usr/local/bin/biome") throw new Error(`the reference lint tool changed: ${lint.exec}`);
  return { ...lint, exec: await realpath(join(ROOT, "node_modules/.bin/biome")) };
}

/** The configuration directory: the probe agent, the operator's tool scripts and the pipeline. */
export async function hostileConfig(repo: HostileRepo, markers: string, npmCache: string): Promise<string> {
  const marker = (name: string) => ({ MARKER: join(markers, name) });
  const hostTools = {
    list: {
      description: "list a path",
      input: { path: { type: "string", required: true } },
      exec: "__DIR__/bin/list-tool",
      args: ["-1", "$path"],
      env: marker("list-ran"),
    },
    "list-options": {
      description: "list, options allowed",
      input: { path: { type: "string", required: true, allow_options: true } },
      exec: "__DIR__/bin/list-tool",
      args: ["-1", "$path"],
      env: marker("list-options-ran"),
    },
    show: {
      description: "print one file of the worktree",
      input: { file: { type: "path", required: true } },
      exec: "__DIR__/bin/show-tool",
      args: ["$file"],
      env: marker("show-ran"),
    },
    "by-name": { description: "run pr-lint by name", exec: "/usr/bin/env", args: ["pr-lint"] },
    "npx-lint": {
      description: "run pr-lint through npx",
      exec: "/usr/bin/npx",
      args: ["--no", "pr-lint"],
      // offline: a package npx does not find locally fails at once instead of reaching the registry
      env: { npm_config_offline: "true", npm_config_cache: npmCache, npm_config_update_notifier: "false" },
    },
    "in-worktree": { description: "lint inside the worktree", exec: "__DIR__/bin/in-worktree-tool" },
    where: { description: "what a tool sees", exec: "__DIR__/bin/where-tool" },
    lint: await referenceLintTool(),
  };
  const files = baseFiles(
    {
      sources: `    hostile-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`,
      targets: `  prober:
    runtime: command
    command: ["./bin/probe-agent"]
    timeout: 60s
repos:
  acme/hostile: { clone_url: ${repo.bare} }
${stringify({ host_tools: hostTools })}`,
    },
    {
      "pipelines/hostile.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [hostile-hook]
targets: [prober]
tools: [${Object.keys(hostTools).join(", ")}]
instructions: review the pull request
`,
    },
  );
  files["bin/probe-agent"] = PROBE_AGENT;
  files["bin/list-tool"] = LIST_TOOL;
  files["bin/show-tool"] = SHOW_TOOL;
  files["bin/where-tool"] = WHERE_TOOL;
  files["bin/in-worktree-tool"] = IN_WORKTREE_TOOL;
  const tools = [
    "bin/probe-agent",
    "bin/list-tool",
    "bin/show-tool",
    "bin/where-tool",
    "bin/in-worktree-tool",
  ];
  const dir = await writeConfigDir(files, [...EXECUTABLES, ...tools]);
  // the tools' absolute paths are known once the directory exists
  const daemon = join(dir, "daemon.yaml");
  await writeFile(daemon, (await readFile(daemon, "utf8")).replaceAll("__DIR__", dir));
  return dir;
}
