import { execFileSync } from "node:child_process";

/**
 * GitHub's comparison of two commits (`GET /repos/{owner}/{repo}/compare/{base}...{head}`) answered
 * from a real repository on disk (the fake's git over smart HTTP): the diff from the merge base of
 * the two to `head`, each file with GitHub's status and its `patch` (the unified diff from its
 * first `@@`, as GitHub gives it). An unknown commit answers 404 as GitHub does.
 */
export function answerCompare(gitDir: string, base: string, head: string): { status: number; body: unknown } {
  const git = (args: string[]) => execFileSync("git", ["--git-dir", gitDir, ...args], { encoding: "utf8" });
  try {
    git(["cat-file", "-e", `${base}^{commit}`]);
    git(["cat-file", "-e", `${head}^{commit}`]);
  } catch {
    return {
      status: 404,
      body: {
        message: `No common ancestor between ${base} and ${head}.`,
        documentation_url: "https://docs.github.com/rest/commits/commits#compare-two-commits",
        status: "404",
      },
    };
  }
  const mergeBase = git(["merge-base", base, head]).trim();
  const statuses: Record<string, string> = { A: "added", D: "removed", M: "modified", R: "renamed" };
  const files = git(["diff", "--name-status", "-M", mergeBase, head])
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [code, first, second] = line.split("\t") as [string, string, string | undefined];
      const filename = second ?? first;
      const diff = git(["diff", "-M", mergeBase, head, "--", ...(second ? [first, second] : [first])]);
      const at = diff.indexOf("\n@@");
      return {
        filename,
        status: statuses[code[0]!] ?? "modified",
        ...(second ? { previous_filename: first } : {}),
        ...(at >= 0 ? { patch: diff.slice(at + 1).replace(/\n$/, "") } : {}),
      };
    });
  const commits = git(["rev-list", "--reverse", `${mergeBase}..${head}`])
    .split("\n")
    .filter(Boolean)
    .map((sha) => ({ sha }));
  return {
    status: 200,
    body: {
      status: mergeBase === head ? "identical" : mergeBase === base ? "ahead" : "diverged",
      merge_base_commit: { sha: mergeBase },
      ahead_by: commits.length,
      total_commits: commits.length,
      commits,
      files,
    },
  };
}
