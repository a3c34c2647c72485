import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const COMMANDS = join(import.meta.dirname, "../../../cli/commands");

function commandFiles(): string[] {
  return readdirSync(COMMANDS, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

interface FlagShape {
  multiple?: boolean;
  multipleNonGreedy?: boolean;
}

/**
 * oclif's `multiple` flag is greedy: `svc ask --target a --target b "question"` would take the
 * question as a third target. Every repeatable flag of the CLI takes one value per occurrence.
 */
describe("repeatable flags of every command", () => {
  it("take one value each (multipleNonGreedy)", async () => {
    const greedy: string[] = [];
    let repeatable = 0;
    for (const file of commandFiles()) {
      const module = (await import(pathToFileURL(file).href)) as {
        default?: { flags?: Record<string, FlagShape> };
      };
      for (const [name, flag] of Object.entries(module.default?.flags ?? {})) {
        if (!flag.multiple) continue;
        repeatable++;
        if (!flag.multipleNonGreedy) greedy.push(`${relative(COMMANDS, file)} --${name}`);
      }
    }
    expect(repeatable).toBeGreaterThan(0);
    expect(greedy).toEqual([]);
  }, 60_000);
});
