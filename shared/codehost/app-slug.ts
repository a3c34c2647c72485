/**
 * The slug of each GitHub App this process acts as (`GET /app`), learned once at start-up: comment
 * commands address the App by it (`@<slug> review`) unless `codehost.bot_name` says otherwise. A
 * cache of a fact of GitHub's, per process; nothing is stored.
 */
const slugs = new Map<number, string>();

export function rememberAppSlug(appId: number, slug: string): void {
  slugs.set(appId, slug);
}

export function knownAppSlug(appId: number): string | undefined {
  return slugs.get(appId);
}

/**
 * The username of the GitLab user svc acts as (`GET /user`), learned at start-up like an App's
 * slug: GitLab's commands address it as `@<username> review`. Keyed by the API it was asked of.
 */
const gitlabUsers = new Map<string, string>();

export function rememberGitlabUser(apiUrl: string, username: string): void {
  gitlabUsers.set(apiUrl, username);
}

export function knownGitlabUser(apiUrl: string): string | undefined {
  return gitlabUsers.get(apiUrl);
}
