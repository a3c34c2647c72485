import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { AGENT_CLIS, pinnedVersion } from "../../shared/agent-clis/pins.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { AgentCliTarget, ConfigProblem, ConfigSnapshot } from "../../shared/config/types.ts";
import { findOnPath } from "../../shared/executables.ts";
import type { CheckOutcome, DoctorCheck } from "./types.ts";

const run = promisify(execFile);
const VERSION = /\d+\.\d+\.\d+[0-9A-Za-z.+-]*/;

/**
 * Each agent CLI the configuration's `claude-code` and `codex` targets run: found where the
 * target looks (`bin`, else the PATH), and its version against the pin. A missing CLI is an
 * error (its runs would fail over every time); another version than the pin is a warning, since
 * it runs but is not the version svc is tested with.
 */
export const agentClisCheck: DoctorCheck = {
  name: "agent-clis",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration does not load", problems: [] };
    const inImage = sandboxedOnly(loaded.config);
    const all = Object.values(loaded.config.targets).filter(
      (target): target is AgentCliTarget => target.runtime === "claude-code" || target.runtime === "codex",
    );
    // a target only sandboxed pipelines run starts its CLI in their image (agent-in-image checks it)
    const targets = all.filter((target) => !inImage.has(target.name));
    if (all.length === 0)
      return { status: "skipped", detail: "no claude-code or codex target", problems: [] };
    if (targets.length === 0)
      return {
        status: "skipped",
        detail: `${all.map((target) => target.name).join(", ")} ${all.length === 1 ? "runs" : "run"} only in sandboxed pipelines' images (svc doctor --deep checks them there)`,
        problems: [],
      };
    const problems: ConfigProblem[] = [];
    const details: string[] = [];
    const seen = new Set<string>();
    for (const target of targets) {
      const key = `${target.runtime}\u0000${target.bin ?? ""}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const found = await cliVersion(target, ctx.env);
      const pin = pinnedVersion(target.runtime);
      const file = new ConfigFile("daemon.yaml", problems);
      const where = ["targets", target.name, ...(target.bin ? ["bin"] : [])];
      if ("missing" in found) {
        file.report(
          where,
          "agent_cli_missing",
          `${found.missing} - install ${AGENT_CLIS[target.runtime].package}@${pin} or set "targets.${target.name}.bin"`,
        );
        details.push(`${target.runtime} missing`);
      } else if (found.version !== pin) {
        file.report(
          where,
          "agent_cli_version",
          `${target.runtime} at ${found.path} is ${found.version}, the pin is ${pin} - install ${AGENT_CLIS[target.runtime].package}@${pin}`,
          "warning",
        );
        details.push(`${target.runtime} ${found.version} (pinned ${pin})`);
      } else {
        details.push(`${target.runtime} ${found.version} (pinned)`);
      }
    }
    const status = problems.some((p) => p.severity === "error")
      ? "error"
      : problems.length
        ? "warning"
        : "ok";
    return { status, detail: details.join(", "), problems };
  },
};

async function cliVersion(
  target: AgentCliTarget,
  env: NodeJS.ProcessEnv,
): Promise<{ path: string; version: string } | { missing: string }> {
  const path = target.bin ?? findOnPath(AGENT_CLIS[target.runtime].command, env);
  if (!path)
    return { missing: `"${AGENT_CLIS[target.runtime].command}" of target ${target.name} is not on the PATH` };
  try {
    // only PATH: the CLI must not read the operator's own agent configuration to print its version
    const { stdout } = await run(path, ["--version"], { env: { PATH: env.PATH ?? "" }, timeout: 10_000 });
    const version = VERSION.exec(stdout)?.[0];
    if (version) return { path, version };
    return { missing: `${path} of target ${target.name} printed no version for --version` };
  } catch (error) {
    return {
      missing: `${path} of target ${target.name} does not run: ${(error as Error).message.split("\n")[0]}`,
    };
  }
}

/**
 * The targets only sandboxed pipelines name (their targets and orchestrators'): nothing runs them
 * on this host. A target `ask`, the knowledge rewrite or an unsandboxed pipeline names runs here.
 */
function sandboxedOnly(config: ConfigSnapshot): Set<string> {
  const onHost = new Set([...config.ask.targets, ...config.knowledge.retrieval.rewrite.targets]);
  const boxed = new Set<string>();
  for (const pipeline of Object.values(config.pipelines)) {
    const names = [
      ...pipeline.targets,
      ...(pipeline.orchestrator?.targets ?? []),
      ...(pipeline.budget?.overBudget ?? []),
    ];
    for (const name of names) (pipeline.sandbox ? boxed : onHost).add(name);
  }
  return new Set([...boxed].filter((name) => !onHost.has(name)));
}
