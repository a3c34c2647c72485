import { isMap, type YAMLMap } from "yaml";
import { has, mapAt } from "../edit.ts";
import { daemon, type Step } from "./step.ts";

/**
 * 0.11.0: `agents.<name>.watch` removed. What an agent watched becomes a pipeline with
 * `trigger.tracker` on an agent session event; which events and which instructions is the operator's
 * choice, so this is a to-do and the key stays until then (the loader keeps refusing it).
 */
export const v0_11_0: Step = {
  release: "0.11.0",
  title: '"agents.<name>.watch" → a to-do (use "trigger.tracker" on an agent session event in a pipeline)',
  apply(tree) {
    const d = daemon(tree, this.release);
    const agents = d && mapAt(d.doc, ["agents"]);
    for (const item of agents?.items ?? []) {
      const name = String((item.key as { value: unknown }).value);
      const agent = isMap(item.value) ? (item.value as YAMLMap) : undefined;
      if (!d || !agent || !has(agent, "watch")) continue;
      d.todo(
        agent,
        ["agents", name],
        "watch",
        `write a pipeline for agent "${name}" with "trigger.tracker" on an agent session event instead, then delete "watch"`,
      );
    }
  },
};
