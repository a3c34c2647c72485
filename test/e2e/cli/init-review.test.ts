import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { svc } from "./support.ts";

const AGENTS = [
  { agent: "claude-code", target: "claude", runtime: "claude-code", key: "ANTHROPIC_API_KEY" },
  { agent: "codex", target: "codex", runtime: "codex", key: "OPENAI_API_KEY" },
] as const;

const FILES = ["agents/reviewer/PERSONA.md", "daemon.yaml", "pipelines/pr-review.yaml"];

let parent: string;
beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), "svc-init-"));
});
afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

/** A configuration directory that does not exist yet, and an environment with none of the variables. */
async function freshDir(name: string): Promise<{ dir: string; env: Record<string, string> }> {
  const home = await mkdtemp(join(parent, `${name}-home-`));
  return { dir: join(parent, name, ".svc"), env: { HOME: home } };
}

/** Every file under `dir`, path → text. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[relative(dir, path)] = await readFile(path, "utf8");
  }
  return out;
}

/** `${NAME}`, as daemon.yaml reads a variable. */
function ref(name: string): string {
  return `\${${name}}`;
}

/** The variables the next steps name, one per line under "Set these variables". */
function namedVariables(stdout: string): string[] {
  const steps = stdout.slice(stdout.indexOf("Next steps:"));
  return [...steps.matchAll(/^ {7}([A-Z][A-Z0-9_]+) {2}/gm)].map((match) => match[1]!);
}

describe.each(AGENTS)("svc init review --agent $agent", ({ agent, target, runtime, key }) => {
  let dir: string;
  let env: Record<string, string>;
  let first: Awaited<ReturnType<typeof svc>>;
  beforeAll(async () => {
    ({ dir, env } = await freshDir(agent));
    first = await svc(["init", "review", "--agent", agent, "--dir", dir], env);
  });

  it("writes the pipeline, its persona and a daemon.yaml into an empty directory, then validation, then next steps", async () => {
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(Object.keys(await tree(dir)).sort()).toEqual(FILES);
    const lines = first.stdout.split("\n");
    expect(lines.slice(0, 3)).toEqual([
      `wrote ${join(dir, "pipelines/pr-review.yaml")}`,
      `wrote ${join(dir, "agents/reviewer/PERSONA.md")}`,
      `wrote ${join(dir, "daemon.yaml")}`,
    ]);
    const validation = first.stdout.indexOf("configuration valid: 1 pipeline, 1 source, 2 targets");
    const next = first.stdout.indexOf("Next steps:");
    expect(validation).toBeGreaterThan(0);
    expect(next).toBeGreaterThan(validation);
    expect(first.stdout).toContain(
      `GITHUB_WEBHOOK_SECRET, GITHUB_TOKEN, ${key} are not set here: checked with stand-in values`,
    );
    expect(namedVariables(first.stdout)).toEqual(["GITHUB_WEBHOOK_SECRET", "GITHUB_TOKEN", key]);
    expect(first.stdout).toContain(`svc config validate --dir ${dir} && svc doctor --dir ${dir}`);
    expect(first.stdout).toContain("Name the repositories to review under repos: in daemon.yaml");
    // the path on: the App made with one button, then the doctor's proof on a real pull request
    const steps = first.stdout.slice(next);
    expect(steps.indexOf(`svc setup github --force --dir ${dir}`)).toBeGreaterThan(
      steps.indexOf(`Start the daemon: svc daemon start --dir ${dir}`),
    );
    expect(steps).toContain(
      `svc doctor --deep --dir ${dir}, then, on an open pull request, svc doctor --deep --fire`,
    );
  });

  it("the pipeline is the review the issue asks for: sandboxed, sticky progress, cancelled when superseded, incremental, gated", async () => {
    const text = await readFile(join(dir, "pipelines/pr-review.yaml"), "utf8");
    const pipeline = parse(text);
    expect(pipeline.targets).toEqual([target]);
    expect(pipeline.sandbox).toEqual({ image: "agent:default", network: "none" });
    expect(pipeline.concurrency).toEqual({ group: "pull_request", cancel_in_progress: true });
    expect(pipeline.authors).toEqual(["owner", "member", "collaborator"]);
    expect(pipeline.trigger.codehost).toContainEqual({ command: "review" });
    expect(pipeline.outputs.review).toEqual({
      handler: "codehost.review",
      sticky: true,
      progress: true,
      resolve_outdated: true,
    });
    const setup = pipeline.setup.map((step: { run: string }) => step.run).join("\n");
    expect(setup).toContain('git -C "$WORKTREE" diff "$PREVIOUS_SHA" HEAD');
    expect(setup).toContain('git -C "$WORKTREE" diff "$BASE_SHA...HEAD"');
    expect(pipeline.instructions).toContain("changes.diff");
    const daemon = parse(await readFile(join(dir, "daemon.yaml"), "utf8"));
    expect(daemon.targets[target]).toMatchObject({ runtime, credentials: [{ secret: ref(key) }] });
    expect(daemon.webhooks.sources.github).toEqual({
      verify: "codehost",
      secret: ref("GITHUB_WEBHOOK_SECRET"),
    });
    expect(daemon.codehost).toEqual({ token: ref("GITHUB_TOKEN") });
    expect(daemon.sandboxes.network).toBe("none");
  });

  it("svc config validate names exactly the variables the next steps list, and passes once they are set", async () => {
    const unset = await svc(["config", "validate", "--json", "--dir", dir], env);
    expect(unset.code).toBe(1);
    const problems = JSON.parse(unset.stdout).problems as { code: string; message: string }[];
    expect(new Set(problems.map((problem) => problem.code))).toEqual(new Set(["env_unset"]));
    const named = new Set(problems.map((problem) => /environment variable (\w+)/.exec(problem.message)![1]));
    expect(named).toEqual(new Set(namedVariables(first.stdout)));

    const set = Object.fromEntries(namedVariables(first.stdout).map((name) => [name, `dummy-${name}`]));
    const valid = await svc(["config", "validate", "--dir", dir], { ...env, ...set });
    expect(valid.stdout.trim()).toBe(`configuration valid: 1 pipeline, 1 source, 2 targets (${dir})`);
    expect(valid.code).toBe(0);
  });

  it("run again without --force it changes nothing and names each file that exists; --force rewrites the pipeline and persona, never daemon.yaml", async () => {
    const pipelinePath = join(dir, "pipelines/pr-review.yaml");
    const personaPath = join(dir, "agents/reviewer/PERSONA.md");
    const daemonPath = join(dir, "daemon.yaml");
    const written = await tree(dir);
    await writeFile(pipelinePath, "# edited by hand\n");
    await writeFile(personaPath, "---\nname: reviewer\ndescription: Mine.\n---\nMine.\n");
    await writeFile(daemonPath, `${written["daemon.yaml"]}# edited by hand\n`);
    const before = await tree(dir);
    const mtimes = await Promise.all(FILES.map(async (file) => (await stat(join(dir, file))).mtimeMs));

    const again = await svc(["init", "review", "--agent", agent, "--dir", dir], env);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toBe(
      [
        "svc init review: these files exist, and nothing was written:",
        `  ${pipelinePath}`,
        `  ${personaPath}`,
        "Run again with --force to overwrite them (daemon.yaml is never overwritten), or move them away.",
        "",
      ].join("\n"),
    );
    expect(await tree(dir)).toEqual(before);
    expect(await Promise.all(FILES.map(async (file) => (await stat(join(dir, file))).mtimeMs))).toEqual(
      mtimes,
    );

    const forced = await svc(["init", "review", "--agent", agent, "--dir", dir, "--force"], env);
    expect(forced.stderr).toBe("");
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(
      `overwrote ${pipelinePath}\noverwrote ${personaPath}\nkept ${daemonPath}`,
    );
    expect(forced.stdout).toContain("configuration valid: 1 pipeline, 1 source, 2 targets");
    expect(forced.stdout).toContain("svc daemon restart");
    const after = await tree(dir);
    expect(after["pipelines/pr-review.yaml"]).toBe(written["pipelines/pr-review.yaml"]);
    expect(after["agents/reviewer/PERSONA.md"]).toBe(written["agents/reviewer/PERSONA.md"]);
    expect(after["daemon.yaml"]).toBe(before["daemon.yaml"]);
  });
});

describe.each(AGENTS)("svc init review --agent $agent --credential stored", ({ agent, target, key }) => {
  const credential = agent === "codex" ? "openai" : "anthropic";
  const stored = `target/${target}/${credential}`;

  it("the targets name the stored key (secret_ref), validation passes, and the next steps say svc secret set", async () => {
    const { dir, env } = await freshDir(`${agent}-stored`);
    const run = await svc(["init", "review", "--agent", agent, "--credential", "stored", "--dir", dir], env);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const text = await readFile(join(dir, "daemon.yaml"), "utf8");
    expect(text).not.toContain(key);
    const daemon = parse(text);
    const askTarget = agent === "codex" ? "openai-api" : "claude-api";
    expect(daemon.targets[target].credentials).toEqual([{ name: credential, secret_ref: stored }]);
    expect(daemon.targets[askTarget].credentials).toEqual([{ name: credential, secret_ref: stored }]);
    expect(run.stdout).toContain("configuration valid: 1 pipeline, 1 source, 2 targets");
    expect(namedVariables(run.stdout)).toEqual(["GITHUB_WEBHOOK_SECRET", "GITHUB_TOKEN"]);
    const steps = run.stdout.slice(run.stdout.indexOf("Next steps:"));
    expect(steps).toContain(`svc setup instance-key --dir ${dir}`);
    expect(steps).toContain(`svc secret set ${stored} --dir ${dir}`);
    expect(steps).toContain("prompted for and never echoed");

    // the loader takes the reference as it is (resolved when the daemon starts): valid once the variables are set
    const valid = await svc(["config", "validate", "--dir", dir], {
      ...env,
      GITHUB_WEBHOOK_SECRET: "set",
      GITHUB_TOKEN: "set",
    });
    expect(valid.stdout.trim()).toBe(`configuration valid: 1 pipeline, 1 source, 2 targets (${dir})`);
    expect(valid.code).toBe(0);
  });

  it("--credential env is the default and writes the variable", async () => {
    const { dir, env } = await freshDir(`${agent}-env`);
    const run = await svc(["init", "review", "--agent", agent, "--credential", "env", "--dir", dir], env);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("svc secret set");
    const daemon = parse(await readFile(join(dir, "daemon.yaml"), "utf8"));
    expect(daemon.targets[target].credentials).toEqual([{ name: credential, secret: ref(key) }]);
  });
});

describe("svc init review --credential", () => {
  it("an unknown source is refused by the flag's options, and nothing is written", async () => {
    const { dir, env } = await freshDir("credential-bad");
    const run = await svc(["init", "review", "--agent", "codex", "--credential", "vault", "--dir", dir], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Expected --credential=vault to be one of: env, stored");
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("into a daemon.yaml without the agent's target: the block to add names the stored key, and so do the next steps", async () => {
    const { dir, env } = await freshDir("credential-switch");
    expect((await svc(["init", "review", "--agent", "claude-code", "--dir", dir], env)).code).toBe(0);
    const run = await svc(
      ["init", "review", "--agent", "codex", "--credential", "stored", "--dir", dir, "--force"],
      env,
    );
    expect(run.stdout).toMatch(/^ {10}secret_ref: target\/codex\/openai$/m);
    expect(run.stdout).toContain("and store its key: see the next steps");
    expect(run.stdout).toContain(`svc secret set target/codex/openai --dir ${dir}`);
  });
});

describe("svc init", () => {
  it("without a template lists the templates, one line each", async () => {
    const run = await svc(["init"], { HOME: tmpdir() });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Templates (svc init <template> --help gives its flags and examples):");
    expect(run.stdout).toMatch(
      /^ {2}review {2}A pull request review pipeline for Claude Code or Codex: sandboxed, incremental, one sticky progress comment$/m,
    );
  });

  it("an unknown template is named, with the ones there are", async () => {
    const run = await svc(["init", "nightly"], { HOME: tmpdir() });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('unknown template "nightly": svc init has review\n');
  });

  it("--help shows examples on both", async () => {
    const index = await svc(["init", "--help"], { HOME: tmpdir() });
    expect(index.stdout).toContain("$ svc init review --agent claude-code");
    const review = await svc(["init", "review", "--help"], { HOME: tmpdir() });
    expect(review.stdout).toContain(
      "$ svc init review --agent codex --repo acme/widgets --repo acme/gadgets",
    );
    expect(review.stdout).toContain("--agent=<claude-code|codex>");
  });

  it("an unknown agent is a precise error, and nothing is written", async () => {
    const { dir, env } = await freshDir("unknown-agent");
    const run = await svc(["init", "review", "--agent", "gpt-5", "--dir", dir], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'unknown agent "gpt-5": --agent takes claude-code or codex; nothing was written\n',
    );
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("--repo fills repos: of the new daemon.yaml; a malformed one is refused before anything is written", async () => {
    const { dir, env } = await freshDir("repos");
    const bad = await svc(["init", "review", "--agent", "codex", "--dir", dir, "--repo", "widgets"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      '--repo "widgets" is not a repository: write <owner>/<name>, e.g. acme/widgets\n',
    );
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });

    const args = [
      "init",
      "review",
      "--agent",
      "codex",
      "--dir",
      dir,
      "--repo",
      "acme/widgets",
      "--repo",
      "acme/gadgets",
    ];
    const run = await svc(args, {
      ...env,
      GITHUB_TOKEN: "set",
      GITHUB_WEBHOOK_SECRET: "set",
      OPENAI_API_KEY: "set",
    });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("stand-in");
    expect(run.stdout).not.toContain("Name the repositories");
    expect(parse(await readFile(join(dir, "daemon.yaml"), "utf8")).repos).toEqual({
      "acme/widgets": {},
      "acme/gadgets": {},
    });
  });

  it("into a daemon.yaml without the agent's target: writes the pipeline, keeps daemon.yaml, prints the target's block and fails validation", async () => {
    const { dir, env } = await freshDir("switch");
    expect((await svc(["init", "review", "--agent", "claude-code", "--dir", dir], env)).code).toBe(0);
    const daemon = await readFile(join(dir, "daemon.yaml"), "utf8");
    const run = await svc(["init", "review", "--agent", "codex", "--dir", dir, "--force"], env);
    expect(run.code).toBe(1);
    expect(await readFile(join(dir, "daemon.yaml"), "utf8")).toBe(daemon);
    expect(run.stdout).toContain(`kept ${join(dir, "daemon.yaml")} as it is (it exists)`);
    expect(run.stdout).toContain('target "codex" at "targets[0]" is not defined');
    expect(run.stdout).toContain(
      `${join(dir, "daemon.yaml")} has no target "codex", which the pipeline runs on`,
    );
    expect(run.stdout).toMatch(/^ {4}codex: .*\n {6}runtime: codex\n/m);
    expect(run.stdout).toContain(`secret: ${ref("OPENAI_API_KEY")}`);
    expect(namedVariables(run.stdout)).toContain("OPENAI_API_KEY");
  });
});
