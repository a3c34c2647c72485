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
