// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rememberGitlabUser } from "../../../shared/codehost/app-slug.ts";
import { botName } from "../../../shared/config/authors.ts";
import { loadConfig } from "../../../shared/config/load.ts";

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const DAEMON = `webhooks:
  sources:
    gitlab: { verify: gitlab, secret: "\${HOOK}" }
targets:
  local: { runtime: command, command: ["/bin/cat"] }
ask:
  targets: [local]
repos:
  acme/widgets: {}
`;

async function load(codehost: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-codehost-kind-"));
  temps.push(dir);
  const files: Record<string, string> = {
    "daemon.yaml": `${DAEMON}${codehost}`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return loadConfig({ dir, env: { HOOK: "h", GL: "glpat-x" } });
}

describe("codehost.kind", () => {
  it("gitlab: GitLab's API (gitlab.com by default), its token, and clone URLs under GitLab's origin", async () => {
    const result = await load(
      "codehost:\n  kind: gitlab\n  api_url: https://git.example.com/api/v4\n  token: ${GL}\n",
    );
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.config.codehost).toMatchObject({
      kind: "gitlab",
      apiUrl: "https://git.example.com/api/v4",
      token: { kind: "inline", value: "glpat-x" },
    });
    expect(result.config.repos["acme/widgets"]?.cloneUrl).toBe("https://git.example.com/acme/widgets.git");
    const fallback = await load("codehost:\n  kind: gitlab\n  token: ${GL}\n");
    if (!fallback.ok) throw new Error(JSON.stringify(fallback.problems));
    expect(fallback.config.codehost?.apiUrl).toBe("https://gitlab.com/api/v4");
  });

  it("github is the default and writes no kind", async () => {
    const result = await load("codehost:\n  token: ${GL}\n");
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.config.codehost?.kind).toBeUndefined();
    expect(result.config.codehost?.apiUrl).toBe("https://api.github.com");
  });

  it("refuses an unknown kind, and a GitHub App with kind: gitlab, naming the key and the fix", async () => {
    const unknown = await load("codehost:\n  kind: gitea\n  token: ${GL}\n");
    expect(unknown.ok).toBe(false);
    if (!unknown.ok)
      expect(unknown.problems.map((p) => p.message).join("\n")).toContain(
        '"codehost.kind" must be github or gitlab (got "gitea")',
      );
    const app = await load('codehost:\n  kind: gitlab\n  app: { id: 1, private_key: "${GL}" }\n');
    expect(app.ok).toBe(false);
    if (!app.ok)
      expect(app.problems.map((p) => p.message).join("\n")).toContain(
        '"codehost.app" is a GitHub App and GitLab has none',
      );
  });

  it("comment commands address the GitLab user svc acts as, learned from GET /user", async () => {
    const result = await load(
      "codehost:\n  kind: gitlab\n  api_url: https://git2.example.com/api/v4\n  token: ${GL}\n",
    );
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(botName(result.config)).toBe("svc");
    rememberGitlabUser("https://git2.example.com/api/v4", "review-bot");
    expect(botName(result.config)).toBe("review-bot");
  });
});
