import { execFileSync, spawnSync } from "node:child_process";
import {
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  readRegularFile,
  type SkippedEntry,
  walkNoFollow,
  writeFreshFile,
} from "../../../shared/no-follow.ts";
import { handOver } from "../../../worker/exec/sandbox/handover.ts";

describe("files someone else may have written", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-no-follow-"));
  const outside = join(dir, "outside.txt");
  writeFileSync(outside, "HOST ONLY\n", { mode: 0o600 });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const tree = () => {
    const root = mkdtempSync(join(dir, "tree-"));
    mkdirSync(join(root, "sub"));
    writeFileSync(join(root, "sub", "ok.txt"), "fine\n");
    symlinkSync(outside, join(root, "link"));
    symlinkSync(dir, join(root, "sub", "dir-link"));
    execFileSync("mkfifo", [join(root, "fifo")]);
    return root;
  };

  it("a walk visits directories and regular files, and names every link and FIFO it skipped without opening it", () => {
    const root = tree();
    const visited: string[] = [];
    const skipped: SkippedEntry[] = [];
    walkNoFollow(root, {
      visit: (_fd, stats, path) => visited.push(`${stats.isDirectory() ? "dir" : "file"} ${path}`),
      skip: (entry) => skipped.push(entry),
    });
    expect(visited.sort()).toEqual(["dir ", "dir sub", "file sub/ok.txt"]);
    expect(skipped.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "fifo", kind: "FIFO" },
      { path: "link", kind: "symbolic link" },
      { path: "sub/dir-link", kind: "symbolic link" },
    ]);
  });

  it("reads a regular file, and nothing through a link or from a FIFO (which would block)", () => {
    const root = tree();
    expect(readRegularFile(join(root, "sub", "ok.txt"))).toBe("fine\n");
    expect(readRegularFile(join(root, "link"))).toBeUndefined();
    expect(readRegularFile(join(root, "fifo"))).toBeUndefined();
    expect(readRegularFile(join(root, "absent"))).toBeUndefined();
  });

  it("writes a fresh file in place of a link, never through it", () => {
    const root = tree();
    writeFreshFile(join(root, "link"), "token\n", 0o600);
    expect(lstatSync(join(root, "link")).isFile()).toBe(true);
    expect(statSync(join(root, "link")).mode & 0o777).toBe(0o600);
    expect(readFileSync(outside, "utf8")).toBe("HOST ONLY\n");
  });

  it.skipIf(process.getuid?.() !== 0)(
    "hands a tree to a user by descriptor: its files and directories, not what its links name",
    () => {
      const root = tree();
      handOver(root, { uid: 1000, gid: 1000 });
      for (const path of [root, join(root, "sub"), join(root, "sub", "ok.txt")])
        expect({ path, uid: statSync(path).uid, gid: statSync(path).gid }).toEqual({
          path,
          uid: 1000,
          gid: 1000,
        });
      expect(statSync(outside).uid).toBe(0);
      expect(statSync(dir).uid).toBe(0);
      expect(lstatSync(join(root, "link")).uid).toBe(0);
    },
  );

  it.skipIf(process.getuid?.() !== 0)(
    "a worker that may not give files away fails, naming the fix, and opens nothing to everyone",
    () => {
      const root = mkdtempSync(join(dir, "nobody-"));
      writeFileSync(join(root, "f"), "x", { mode: 0o600 });
      for (const path of [dir, root, join(root, "f")]) chownSync(path, 65534, 65534);
      const handover = join(
        import.meta.dirname,
        "..",
        "..",
        "..",
        "worker",
        "exec",
        "sandbox",
        "handover.ts",
      );
      const script = `import { handOver } from ${JSON.stringify(handover)};
try { handOver(${JSON.stringify(root)}, { uid: 1000, gid: 1000 }); console.log("handed over"); }
catch (error) { console.log(error.constructor.name + ": " + error.message); }`;
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        uid: 65534,
        gid: 65534,
        encoding: "utf8",
      });
      chownSync(dir, 0, 0);
      expect(child.stdout.trim()).toBe(
        "HandOverError: the worker (uid 65534) may not give the run's folders to the container's user 1000:1000 - run the worker as root, or as uid 1000 (the container's user: the image's USER, else \"sandboxes.user\"); svc never opens them to every user instead",
      );
      for (const path of [root, join(root, "f")]) expect(statSync(path).mode & 0o077).toBe(0);
    },
  );
});
