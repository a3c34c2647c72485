import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { planGithubAppEdit } from "../../../shared/config/github-app-edit.ts";

const ROOT = join(import.meta.dirname, "../../..");
const APP = { id: 4711, slug: "svc-example" };

function edit(text: string, force = false): string {
  const plan = planGithubAppEdit(text, { file: "daemon.yaml", force });
  if (!plan.ok) throw new Error(plan.message);
  return plan.apply(APP);
}

function refusal(text: string, force = false): string {
  const plan = planGithubAppEdit(text, { file: "daemon.yaml", force });
  if (plan.ok) throw new Error("expected a refusal");
  return plan.message;
}

const lines = (text: string) => text.split("\n");

describe("svc setup github's edit of daemon.yaml", () => {
  it("adds the App and the github source, leaving every line it had as written (aligned comments too)", () => {
    const before = `# operator's header
server:
  public_url: https://svc.example.com   # aligned comment
webhooks:
  sources:
    deploy: { verify: bearer, secret_ref: webhook/deploy }   # flow, padded
targets:
  local: { runtime: command, command: ["cat"], timeout: 1m }
ask:
  targets: [local]
codehost:
  api_url: https://ghe.example.com/api/v3   # GHE
  # a comment after the last key stays below the App
# the end
`;
    const after = edit(before);
    expect(lines(after).filter((line) => lines(before).includes(line))).toEqual(lines(before));
    expect(after).toBe(`# operator's header
server:
  public_url: https://svc.example.com   # aligned comment
webhooks:
  sources:
    deploy: { verify: bearer, secret_ref: webhook/deploy }   # flow, padded
    github:
      verify: codehost
      secret_ref: webhook/github
targets:
  local: { runtime: command, command: ["cat"], timeout: 1m }
ask:
  targets: [local]
codehost:
  api_url: https://ghe.example.com/api/v3   # GHE
  # the GitHub App svc-example, created by svc setup github
  app:
    id: 4711
    secret_ref: codehost/app-private-key
  # a comment after the last key stays below the App
# the end
`);
  });

  it("creates the mappings it needs, in a file without a final newline or without them at all", () => {
    expect(parse(edit("ask:\n  targets: [a]"))).toEqual({
      ask: { targets: ["a"] },
      codehost: { app: { id: 4711, secret_ref: "codehost/app-private-key" } },
      webhooks: { sources: { github: { verify: "codehost", secret_ref: "webhook/github" } } },
    });
    expect(parse(edit(""))).toEqual({
      codehost: { app: { id: 4711, secret_ref: "codehost/app-private-key" } },
      webhooks: { sources: { github: { verify: "codehost", secret_ref: "webhook/github" } } },
    });
    const empty = edit("codehost:   # later\nwebhooks:\n  sources: {}\n");
    expect(empty).toContain("codehost:   # later\n");
    expect(empty).toContain("  sources: { github: { verify: codehost, secret_ref: webhook/github } }\n");
  });

  it("refuses an App, a token or a github source already there; --force replaces them where they stand", () => {
    const configured = `codehost:
    app:          # the old App
        id: 5
        secret_ref: codehost/app-private-key
    token_ref: codehost/default
webhooks:
    sources:
        github: { verify: codehost, secret: x }  # old
`;
    expect(refusal(configured)).toBe(
      'daemon.yaml: "codehost.app" is already set (id 5); svc setup github does not replace it - pass --force to replace it with the new App, or remove it first',
    );
    expect(refusal("codehost:\n  token: secret-token\n")).toContain('"codehost.token" is set');
    expect(refusal("webhooks:\n  sources:\n    github: { verify: codehost }\n")).toContain(
      '"webhooks.sources.github" is already set',
    );
    expect(edit(configured, true)).toBe(`codehost:
    app:          # the old App
        id: 4711
        secret_ref: codehost/app-private-key
webhooks:
    sources:
        github: { verify: codehost, secret_ref: webhook/github }  # old
`);
  });

  it("refuses what it cannot edit: a GitLab code host, broken YAML, a list where a mapping belongs", () => {
    expect(refusal("codehost:\n  kind: gitlab\n", true)).toContain("GitHub Apps are GitHub's");
    expect(refusal("a: [\n", true)).toContain("is not valid YAML");
    expect(refusal("webhooks:\n  sources: [a]\n", true)).toContain('"webhooks.sources" is not a mapping');
  });

  it("renders a flow-style parent again, keeping its data and comments", () => {
    const after = edit("# keep me\nwebhooks: { sources: { deploy: { verify: bearer, secret: t } } }\n");
    expect(after).toContain("# keep me");
    expect(parse(after).webhooks.sources).toEqual({
      deploy: { verify: "bearer", secret: "t" },
      github: { verify: "codehost", secret_ref: "webhook/github" },
    });
  });

  it("replaces only the App's lines of the reference configuration", async () => {
    const before = await readFile(join(ROOT, "examples/reference/.svc/daemon.yaml"), "utf8");
    const after = edit(before, true);
    const removed = lines(before).filter((line) => !lines(after).includes(line));
    expect(removed.every((line) => /^\s+(id|private_key|secret_ref|secret|verify):/.test(line))).toBe(true);
    expect(parse(after).codehost.app).toEqual({ id: 4711, secret_ref: "codehost/app-private-key" });
    expect(parse(after).webhooks.sources.github).toEqual({
      verify: "codehost",
      secret_ref: "webhook/github",
    });
  });
});
