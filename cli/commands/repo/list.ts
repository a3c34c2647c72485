import { Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import { table } from "../../table.ts";

interface RepoView {
  name: string;
  cloneUrl: string;
  defaultBranch: string | null;
  error: { code: string; message: string } | null;
  lastRun: { trigger: string; kind: string; event: string; status: string; at: string } | null;
}

export default class RepoList extends Command {
  static override summary = "List the configured repositories";
  static override description =
    "Lists daemon.yaml's repos (GET /repos): each one's default branch as the code host reports it to the " +
    "default identity (codehost.token), and svc's last run on it (trigger, kind, status, when). A repository " +
    "the code host refuses shows the refusal and its fix instead of a branch. Needs `repos:read`.";
  static override examples = ["<%= config.bin %> repo list", "<%= config.bin %> repo list --json"];
  static override enableJsonFlag = true;

  async run(): Promise<{ repos: RepoView[] }> {
    await this.parse(RepoList);
    const answer: { repos: RepoView[] } = await fromDaemon(this, (client) => client.get("/repos"));
    if (!this.jsonEnabled()) {
      if (!answer.repos.length) this.log("daemon.yaml configures no repos");
      else
        this.log(
          table(
            ["REPO", "BRANCH", "LAST RUN", "STATUS", "WHEN"],
            answer.repos.map((repo) => [
              repo.name,
              repo.defaultBranch ?? `(${repo.error?.code ?? "unknown"})`,
              repo.lastRun ? `${repo.lastRun.kind} ${repo.lastRun.event} ${repo.lastRun.trigger}` : "never",
              repo.lastRun?.status,
              repo.lastRun?.at,
            ]),
          ),
        );
      for (const repo of answer.repos) if (repo.error) this.warn(`${repo.name}: ${repo.error.message}`);
    }
    return answer;
  }
}
