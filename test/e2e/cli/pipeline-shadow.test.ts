import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { svc } from "./support.ts";

/**
 * `svc pipeline shadow` and `svc pipeline promote` (issue 57) edit a configuration directory as an
 * operator would by hand, keeping the files' comments, and undo what the configuration refuses.
 */
const DAEMON = `targets:
  local: { runtime: command, command: ["/bin/true"], timeout: 30s }
  next: { runtime: command, command: ["/bin/true"], timeout: 30s }
ask:
  targets: [local]
`;
const LIVE = `# the team's review, tuned over months
version: 1.0.0
agent: helper
targets: [local]   # the model we pay for
instructions: review
`;
const candidate = (version: string) =>
  `version: ${version}\nagent: helper\ntargets: [next]\ninstructions: review, risk first\n`;

describe("svc pipeline shadow and promote", () => {
  let dir: string;
  let parent: string;
  const exists = (path: string) =>
    stat(path).then(
      () => true,
      () => false,
    );

  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), "svc-pipeline-shadow-"));
    dir = join(parent, ".svc");
    await mkdir(join(dir, "pipelines"), { recursive: true });
    await mkdir(join(dir, "agents", "helper"), { recursive: true });
    await writeFile(
      join(dir, "agents", "helper", "PERSONA.md"),
      "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    );
    await writeFile(join(dir, "daemon.yaml"), DAEMON);
    await writeFile(join(dir, "pipelines", "review.yaml"), LIVE);
  });

  afterAll(async () => {
    if (parent) await rm(parent, { recursive: true, force: true });
  });

  it("refuses a candidate with the live version and changes nothing", async () => {
    await writeFile(join(parent, "same.yaml"), candidate("1.0.0"));
    const run = await svc(["pipeline", "shadow", "review", join(parent, "same.yaml"), "--dir", dir], {});
    expect(run.code).toBe(1);
    // oclif wraps an error's lines under a ` ›` margin
    const said = run.stderr.replace(/\s*›\s*/g, " ");
    expect(said).toContain("nothing changed");
    expect(said).toContain("has the live version 1.0.0");
    expect(await readFile(join(dir, "pipelines", "review.yaml"), "utf8")).toBe(LIVE);
    expect(await exists(join(dir, "pipelines", "review.next.yaml"))).toBe(false);
  });

  it("copies the candidate next to the pipeline and writes the shadow, keeping the comments", async () => {
    await writeFile(join(parent, "next.yaml"), candidate("1.1.0-next.1"));
    const run = await svc(
      ["pipeline", "shadow", "review", join(parent, "next.yaml"), "--share", "0.5", "--dir", dir],
      {},
    );
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain(
      "pipeline review runs pipelines/review.next.yaml in its shadow on 50% of its events",
    );
    const live = await readFile(join(dir, "pipelines", "review.yaml"), "utf8");
    expect(live).toContain("# the team's review, tuned over months");
    expect(live).toContain("targets: [local] # the model we pay for");
    expect(live).toContain("shadow: {version_file: pipelines/review.next.yaml, share: 0.5}");
    expect(await readFile(join(dir, "pipelines", "review.next.yaml"), "utf8")).toBe(
      candidate("1.1.0-next.1"),
    );
    const validate = await svc(["config", "validate", "--dir", dir], {});
    expect(validate.stdout).toContain("configuration valid: 1 pipeline");
  });

  it("promotes the candidate: it is live, the old version kept where the daemon does not load it", async () => {
    const run = await svc(["pipeline", "promote", "review", "--dir", dir], {});
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain("pipeline review: 1.1.0-next.1 is live (was 1.0.0");
    expect(await readFile(join(dir, "pipelines", "review.yaml"), "utf8")).toBe(candidate("1.1.0-next.1"));
    expect(await exists(join(dir, "pipelines", "review.next.yaml"))).toBe(false);
    const kept = await readFile(join(dir, "pipelines", "previous", "review@1.0.0.yaml"), "utf8");
    expect(kept).toContain("# the team's review, tuned over months");
    expect(kept).toContain("shadow:");
    const validate = await svc(["config", "validate", "--dir", dir], {});
    expect(validate.stdout).toContain("configuration valid: 1 pipeline");
    // nothing left to promote
    const again = await svc(["pipeline", "promote", "review", "--dir", dir], {});
    expect(again.code).toBe(1);
    expect(again.stderr.replace(/\s*›\s*/g, " ")).toContain("pipeline review has no shadow to promote");
  });
});
