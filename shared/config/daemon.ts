import { readAsk } from "./daemon/ask.ts";
import { readAuth } from "./daemon/auth.ts";
import { checkBudgetPrices, readBudgets } from "./daemon/budgets.ts";
import { readChannels } from "./daemon/channels.ts";
import { declaredNames } from "./daemon/declared-names.ts";
import { readHostTools } from "./daemon/host-tools.ts";
import { checkLifecycle } from "./daemon/lifecycle.ts";
import { readQueue } from "./daemon/queue.ts";
import { readRepos, resolveRepos } from "./daemon/repos.ts";
import { readServer } from "./daemon/server.ts";
import { readTargets } from "./daemon/targets.ts";
import { readWebhooks } from "./daemon/webhooks.ts";
import { readWorker } from "./daemon/worker.ts";
import { readWorkspaces } from "./daemon/workspaces.ts";
import { readKnowledgeSettings } from "./knowledge.ts";
import { readLog } from "./log.ts";
import { readMetrics } from "./metrics.ts";
import { DEFAULT_CODEHOST_API_URL, readCodehost } from "./outputs.ts";
import { checkKeys, mapping, quote, type YamlMap } from "./read.ts";
import { checkHostNetwork, readSandboxes } from "./sandboxes.ts";
import { type ConfigFile, formatPath, type KeyPath } from "./source.ts";
import type { DaemonSettings } from "./types.ts";

const TOP_LEVEL = [
  "server",
  "webhooks",
  "targets",
  "ask",
  "knowledge",
  "repos",
  "codehost",
  "channels",
  "queue",
  "budgets",
  "host_tools",
  "auth",
  "worker",
  "workspaces",
  "metrics",
  "log",
  "sandboxes",
  // containers of removed keys only: their removed children are reported, the rest is ignored
  // (except under lifecycle, which holds nothing: see daemon/lifecycle.ts)
  "defaults",
  "lifecycle",
  "agents",
  "orchestrator",
  "tracing",
];

export function readDaemon(f: ConfigFile, data: unknown, env: NodeJS.ProcessEnv): DaemonSettings {
  const root: YamlMap = data === null || data === undefined ? {} : (mapping(f, data, []) ?? {});
  checkKeys(f, root, [], TOP_LEVEL);
  checkLifecycle(f, root);
  const declared = declaredNames(root);

  const targets = readTargets(f, root);
  const targetExists = (path: KeyPath, names: string[] | undefined) => {
    for (const [index, name] of (names ?? []).entries()) {
      if (!declared.targets.has(name)) {
        f.report(
          [...path, index],
          "unknown_target",
          `target ${quote(name)} at "${formatPath(path)}[${index}]" is not defined - add it to the top-level "targets:" map (defined: ${Object.keys(targets).join(", ") || "none"})`,
        );
      }
    }
  };

  const ask = readAsk(f, root);
  targetExists(["ask", "targets"], ask.targets);
  for (const [index, name] of ask.targets.entries()) {
    const runtime = targets[name]?.runtime;
    if (runtime !== "claude-code" && runtime !== "codex") continue;
    f.report(
      ["ask", "targets", index],
      "invalid_value",
      `target ${quote(name)} at "ask.targets[${index}]" runs ${runtime}, an agent CLI that cannot answer /ask - name an openai or command target`,
    );
  }

  const knowledge = readKnowledgeSettings(f, root);
  targetExists(["knowledge", "retrieval", "rewrite", "targets"], knowledge.retrieval.rewrite.targets);

  // a repository without clone_url is cloned from the code host's origin, known once codehost is read
  const server = readServer(f, root, env);
  const webhooks = readWebhooks(f, root);
  const repos = readRepos(f, root);
  const codehost = readCodehost(f, root);
  const sandboxes = readSandboxes(f, root, env);
  checkHostNetwork(f, ["sandboxes", "network"], sandboxes.network, server.loopbackStar);
  const budgets = readBudgets(f, root);
  checkBudgetPrices(f, budgets, targets);

  return {
    server,
    webhooks,
    targets,
    ask,
    knowledge,
    repos: resolveRepos(repos, codehost?.apiUrl ?? DEFAULT_CODEHOST_API_URL),
    ...withCodehost(codehost),
    channels: readChannels(f, root),
    queue: readQueue(f, root),
    ...(budgets ? { budgets } : {}),
    hostTools: readHostTools(f, root),
    auth: readAuth(f, root),
    worker: readWorker(f, root),
    workspaces: readWorkspaces(f, root),
    sandboxes,
    ...(root.metrics !== undefined ? { metrics: readMetrics(f, root) } : {}),
    ...withLog(readLog(f, root)),
  };
}

function withLog(log: DaemonSettings["log"]): Pick<DaemonSettings, "log"> {
  return log ? { log } : {};
}

function withCodehost(codehost: DaemonSettings["codehost"]): Pick<DaemonSettings, "codehost"> {
  return codehost ? { codehost } : {};
}
