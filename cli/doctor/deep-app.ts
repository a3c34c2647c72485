import { AppAuthError, type AppTokens, appTokens } from "../../shared/codehost/app-tokens.ts";
import { APP_EVENTS, APP_PERMISSIONS } from "../../shared/codehost/github-manifest.ts";
import { codehostWebBase, withoutUserinfo } from "../../shared/config/daemon/repos.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem, ConfigSnapshot } from "../../shared/config/types.ts";
import { keyOf } from "./codehost-app.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck } from "./types.ts";

/** GitHub's names of the permissions on the App's settings page. */
const TITLES: Record<keyof typeof APP_PERMISSIONS, string> = {
  contents: "Contents",
  pull_requests: "Pull requests",
  issues: "Issues",
  checks: "Checks",
  metadata: "Metadata",
};
const LEVELS: Record<string, number> = { read: 1, write: 2, admin: 3 };
const LEVEL_TITLES: Record<string, string> = { read: "Read-only", write: "Read and write" };

/** The fields of GitHub's installation object this check reads. */
export interface Installation {
  id: number;
  account?: { login?: string; type?: string };
  target_type?: string;
  html_url?: string;
  permissions?: Record<string, string>;
  events?: string[];
}

interface AppSelf {
  id?: number;
  slug?: string;
  name?: string;
  owner?: { login?: string; type?: string };
}

/**
 * `svc doctor --deep`, the App's link: the GitHub App of `codehost.app` signs in (`GET /app`), is
 * installed on each repository of `repos:` that lives on the code host
 * (`GET /repos/{owner}/{repo}/installation`; with no such repository, each of its installations is
 * looked at), and each installation met has the permissions and events svc needs. A repository
 * without the App is `app_not_installed`; a permission absent or below its level is
 * `app_permission_missing`, an event not subscribed `app_event_missing`, each naming the
 * installation, the permission or event and the two steps of the fix: the App's settings page,
 * then the installation's owner accepting the new permissions. A key GitHub refuses is left to the
 * codehost-app check. No message carries the key or a token.
 */
export const appInstallationsCheck: DoctorCheck = {
  name: "app-installs",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const { config } = loaded;
    const codehost = config.codehost;
    if (!codehost?.app || codehost.kind === "gitlab")
      return { status: "skipped", detail: "no codehost.app (a GitHub App) in daemon.yaml", problems: [] };
    const app = codehost.app;
    let tokens: AppTokens;
    let self: AppSelf;
    let installations: Installation[];
    try {
      const privateKey = await keyOf(ctx, app.privateKey);
      tokens = appTokens({ apiUrl: codehost.apiUrl, appId: app.id, privateKey });
      self = await tokens.asApp<AppSelf>("GET", "/app");
      installations = await tokens.asApp<Installation[]>("GET", "/app/installations?per_page=100");
    } catch (error) {
      if (!(error instanceof AppAuthError)) throw error;
      // the codehost-app check names the key's fix; without a signed-in App nothing here can be asked
      return {
        status: "skipped",
        detail: `GitHub App ${app.id} cannot sign in (see codehost-app): ${error.message}`,
        problems: [],
      };
    }
    const site = new AppSite(codehostWebBase(codehost.apiUrl), app.id, self);
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const details: string[] = [];
    const repos = hostedRepos(config);
    // each installation is judged once, however many repositories it serves
    const met = new Map<number, { installation: Installation; repos: string[] }>();
    let unknown = 0;
    if (repos.length === 0) {
      if (installations.length === 0) {
        file.report(
          ["codehost", "app"],
          "app_not_installed",
          `"codehost.app": ${site.label} has no installation - install it on the repositories svc serves: ${site.installUrl}`,
        );
        details.push("no installation");
      }
      for (const installation of installations) met.set(installation.id, { installation, repos: [] });
    }
    for (const repo of repos) {
      const [owner, name] = repo.split("/") as [string, string];
      let installation: Installation;
      try {
        installation = await tokens.asApp<Installation>(
          "GET",
          `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/installation`,
        );
      } catch (error) {
        if (!(error instanceof AppAuthError)) throw error;
        if (error.status === 404) {
          const onOwner = installations.find(
            (entry) => entry.account?.login?.toLowerCase() === owner.toLowerCase(),
          );
          const fix = onOwner
            ? `add ${repo} to the repositories of its installation on ${owner} (${site.installationUrl(onOwner)}, "Repository access")`
            : `install it on ${owner} and choose ${repo}: ${site.installUrl}`;
          file.report(
            ["repos", repo],
            "app_not_installed",
            `"repos.${repo}": ${site.label} is not installed on ${repo}: svc can neither read it as the App nor post to it - ${fix}`,
          );
          details.push(`${repo} not installed`);
          continue;
        }
        // GitHub did not say (a 5xx, no answer): neither installed nor not
        unknown += 1;
        details.push(`${repo} not known (${error.message})`);
        continue;
      }
      const entry = met.get(installation.id) ?? { installation, repos: [] };
      entry.repos.push(repo);
      met.set(installation.id, entry);
    }
    for (const { installation, repos: served } of met.values()) {
      const where = `installation ${installation.id} (${installation.account?.login ?? "?"})`;
      const serves = served.length ? `, which serves ${served.join(", ")}` : "";
      const key = served.length ? ["repos", served[0]!] : ["codehost", "app"];
      const label = served.length ? `repos.${served[0]}` : "codehost.app";
      const lacking = missingPermissions(installation.permissions ?? {});
      if (lacking.length > 0) {
        file.report(
          key,
          "app_permission_missing",
          `"${label}": ${where} of ${site.label} lacks ${lacking.map((entry) => entry.text).join(", ")}${serves} - give the App ${lacking.map((entry) => entry.title).join(", ")} on its settings page (${site.settingsUrl("permissions")}, "Permissions & events"), then the installation's owner must accept the new permissions (${site.installationUrl(installation)})`,
        );
      }
      const events = installation.events ?? [];
      const unheard = APP_EVENTS.filter((event) => !events.includes(event));
      if (unheard.length > 0) {
        file.report(
          key,
          "app_event_missing",
          `"${label}": ${where} of ${site.label} is not subscribed to ${unheard.join(", ")}${serves}: svc never hears of them - tick them under "Subscribe to events" on the App's settings page (${site.settingsUrl("permissions")}), then the installation's owner must accept (${site.installationUrl(installation)})`,
        );
      }
      const lacks = [
        ...lacking.map((entry) => entry.text),
        ...(unheard.length ? [`events ${unheard.join(", ")}`] : []),
      ];
      details.push(
        `${served.length ? served.join(", ") : where}: ${lacks.length ? `lacks ${lacks.join(", ")}` : "permissions and events ok"}`,
      );
    }
    const status: CheckStatus = problems.some((p) => p.severity === "error")
      ? "error"
      : problems.length || unknown
        ? "warning"
        : "ok";
    return { status, detail: `${site.label}: ${details.join("; ")}`, problems };
  },
};

/** The repositories of `repos:` the App must be installed on: those cloned from the code host itself. */
function hostedRepos(config: ConfigSnapshot): string[] {
  const base = codehostWebBase(config.codehost!.apiUrl);
  return Object.entries(config.repos)
    .filter(([, repo]) => withoutUserinfo(repo.cloneUrl).startsWith(`${base}/`))
    .map(([name]) => name);
}

/** Each permission svc needs that `granted` lacks or holds below its level. */
export function missingPermissions(granted: Record<string, string>): { text: string; title: string }[] {
  const lacking: { text: string; title: string }[] = [];
  for (const [permission, level] of Object.entries(APP_PERMISSIONS) as [
    keyof typeof APP_PERMISSIONS,
    string,
  ][]) {
    const has = granted[permission];
    if ((LEVELS[has ?? ""] ?? 0) >= LEVELS[level]!) continue;
    lacking.push({
      text: `${permission}: ${level} (it has ${has ?? "none"})`,
      title: `"${TITLES[permission]}: ${LEVEL_TITLES[level]}"`,
    });
  }
  return lacking;
}

/** Where on the code host's web pages the App's fixes are made. */
class AppSite {
  readonly label: string;
  readonly #web: string;
  readonly #self: AppSelf;

  constructor(web: string, id: number, self: AppSelf) {
    this.#web = web;
    this.#self = self;
    this.label = `GitHub App ${self.slug ?? self.name ?? id} (${id})`;
  }

  get installUrl(): string {
    return this.#self.slug
      ? `${this.#web}/apps/${this.#self.slug}/installations/new`
      : `the App's page > Install App`;
  }

  /** The App's settings page: the organisation's when an organisation owns it. */
  settingsUrl(page: string): string {
    const slug = this.#self.slug;
    if (!slug) return "Settings > Developer settings > GitHub Apps";
    const owner = this.#self.owner;
    return owner?.type === "Organization" && owner.login
      ? `${this.#web}/organizations/${owner.login}/settings/apps/${slug}/${page}`
      : `${this.#web}/settings/apps/${slug}/${page}`;
  }

  /** Where the installation's owner reviews and accepts what the App asks for. */
  installationUrl(installation: Installation): string {
    if (installation.html_url) return installation.html_url;
    const login = installation.account?.login;
    return (installation.target_type ?? installation.account?.type) === "Organization" && login
      ? `${this.#web}/organizations/${login}/settings/installations/${installation.id}`
      : `${this.#web}/settings/installations/${installation.id}`;
  }
}
