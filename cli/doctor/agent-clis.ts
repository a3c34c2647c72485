import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { AGENT_CLIS, pinnedVersion } from "../../shared/agent-clis/pins.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { AgentCliTarget, ConfigProblem } from "../../shared/config/types.ts";
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
    const targets = Object.values(loaded.config.targets).filter(
      (target): target is AgentCliTarget => target.runtime === "claude-code" || target.runtime === "codex",
    );
    if (targets.length === 0)
      return { status: "skipped", detail: "no claude-code or codex target", problems: [] };
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
