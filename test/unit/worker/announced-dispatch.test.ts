import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  announcementPayload,
  parseAnnouncement,
  type TriggerAnnouncement,
} from "../../../db/trigger-announcements.ts";
import type { Pipeline } from "../../../shared/config/types.ts";
import type { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import type { CredentialSecrets } from "../../../worker/credentials/secrets.ts";
import { plannedClaim } from "../../../worker/dispatch.ts";
import { sparePrelude } from "../../../worker/gates.ts";
import { commandTarget, makeConfig, pipeline } from "../../integration/worker/helpers.ts";

// command targets are always usable: these never ask the credential state
const credentials = {
  cooldowns: {} as CredentialCooldowns,
  secrets: {} as CredentialSecrets,
};

function deps(pipelines: Pipeline[]) {
  return {
    ...credentials,
    config: makeConfig("/srv/svc", {
      targets: { local: commandTarget("local", ["/bin/true"]) },
      pipelines: Object.fromEntries(pipelines.map((p) => [p.name, p])),
    }),
  };
}

const webhook = (route: string) => ({ webhook: [route], codehost: [], tracker: [] });

describe("the dispatch an announcement decides alone (plannedClaim)", () => {
  it("a webhook route that fires one pipeline", () => {
    const planned = plannedClaim(
      deps([pipeline("stamp", { trigger: webhook("hook"), targets: ["local"] })]),
      {
        kind: "webhook",
        source: "hook",
        eventName: "hook",
      },
    );
    expect(planned?.pipeline.name).toBe("stamp");
    expect(planned?.target).toBe("local");
  });

  it("not a route that fires two pipelines, or none", () => {
    const both = deps([
      pipeline("a", { trigger: webhook("hook") }),
      pipeline("b", { trigger: webhook("hook") }),
    ]);
    expect(plannedClaim(both, { kind: "webhook", source: "hook", eventName: "hook" })).toBeUndefined();
    expect(
      plannedClaim(both, { kind: "webhook", source: "elsewhere", eventName: "elsewhere" }),
    ).toBeUndefined();
  });

  it("a code host event only while no pipeline narrows its events to repositories", () => {
    const broad = pipeline("broad", {
      trigger: { webhook: [], codehost: [{ events: ["push"], repos: [] }], tracker: [] },
    });
    const narrow = pipeline("narrow", {
      trigger: {
        webhook: [],
        codehost: [{ events: ["pull_request"], repos: ["acme/widgets"] }],
        tracker: [],
      },
    });
    const push = { kind: "codehost", source: "github", eventName: "push" };
    expect(plannedClaim(deps([broad]), push)?.pipeline.name).toBe("broad");
    expect(plannedClaim(deps([broad, narrow]), push)).toBeUndefined();
  });

  it("not the kinds whose payload picks the pipeline or the agent", () => {
    const session = pipeline("session", {
      agent: "helper",
      trigger: { webhook: [], codehost: [], tracker: [{ events: ["AgentSessionEvent.created"], repos: [] }] },
    });
    const fired = deps([session]);
    for (const kind of ["tracker", "manual", "replay", "schedule"])
      expect(
        plannedClaim(fired, { kind, source: "session", eventName: "AgentSessionEvent.created" }),
      ).toBeUndefined();
  });

  it("not a pipeline that names an agent or skill that is not configured", () => {
    const lost = pipeline("lost", { agent: "nobody", trigger: webhook("hook") });
    expect(
      plannedClaim(deps([lost]), { kind: "webhook", source: "hook", eventName: "hook" }),
    ).toBeUndefined();
  });
});

describe("trigger announcements", () => {
  it("read back what was announced, and nothing else", () => {
    const announcement = fc.record({
      triggerId: fc.stringMatching(/^trg_[a-z2-7]{20}$/),
      jobId: fc.uuid(),
      kind: fc.constantFrom("webhook", "codehost", "tracker", "manual"),
      source: fc.string(),
      eventName: fc.string(),
    });
    fc.assert(
      fc.property(announcement, (sent: TriggerAnnouncement) => {
        expect(parseAnnouncement(announcementPayload(sent))).toEqual(sent);
      }),
    );
    for (const junk of ["", "svc-dispatch", "{}", "null", '{"t":"trg_a","j":"x"}', "trg_abc 1234"])
      expect(parseAnnouncement(junk)).toBeUndefined();
    expect(
      parseAnnouncement(
        JSON.stringify({ t: "trg_a'; DROP", j: "00000000-0000-4000-8000-000000000000", k: "", s: "", e: "" }),
      ),
    ).toBeUndefined();
  });
});

describe("a spare shell's prelude (gates.ts)", () => {
  it("is refused for names a shell keeps for itself or cannot export, and for NUL bytes", () => {
    const spec = (env: Record<string, string>) => ({ argv: ["/bin/sh", "-c", "true"], cwd: "/", env });
    expect(sparePrelude(spec({ PATH: "/bin", PAYLOAD_JSON: "{}" }))).toContain("export PAYLOAD_JSON='{}'");
    for (const name of ["IFS", "PS1", "OPTIND", "PWD", "OLDPWD", "svc_cwd", "A-B", "1X"])
      expect(sparePrelude(spec({ [name]: "x" }))).toBeUndefined();
    expect(sparePrelude(spec({ A: "x\0y" }))).toBeUndefined();
  });
});
