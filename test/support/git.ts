import { execFileSync } from "node:child_process";

/**
 * A git for a test's own repositories: HOME is `home` (no operator config is read) and every commit
 * is by `author`, so a commit made here needs nothing of the machine's git setup. Returns the
 * trimmed stdout; a failing git throws.
 */
export function testGit(
  home: string,
  author: { name: string; email: string } = { name: "t", email: "t@e" },
): (args: string[], cwd?: string) => string {
  return (args, cwd) =>
    execFileSync("git", args, {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        GIT_AUTHOR_NAME: author.name,
        GIT_AUTHOR_EMAIL: author.email,
        GIT_COMMITTER_NAME: author.name,
        GIT_COMMITTER_EMAIL: author.email,
      },
    })
      .toString()
      .trim();
}
