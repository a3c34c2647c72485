import { isMap, type YAMLMap } from "yaml";
import { has, mapAt, plainValue } from "../edit.ts";
import { daemon, rewrites, type Step } from "./step.ts";

const CODEHOST_PRINCIPAL = /^codehost\.principal\.(.+)$/;

/**
 * 0.12.0: code-host outputs are published as an identity of the new `codehost` block of
 * daemon.yaml (`codehost.token`, `codehost.principals.<id>.token`). Which token each identity uses
 * is the operator's secret, so a pipeline that publishes to the code host, or binds a
 * `codehost.principal.<id>`, gets a to-do while daemon.yaml declares no such identity.
 */
export const v0_12_0: Step = {
  release: "0.12.0",
  title: 'code-host outputs and principals need a "codehost" identity in daemon.yaml → a to-do',
  apply(tree) {
    const codehost = daemon(tree, this.release) && mapAt(tree.doc("daemon.yaml")!, ["codehost"]);
    const defaultIdentity = has(codehost, "token") || has(codehost, "token_ref");
    const principals = codehost && mapAt(tree.doc("daemon.yaml")!, ["codehost", "principals"]);
    for (const file of rewrites(tree, this.release, "pipelines/")) {
      const bound = mapAt(file.doc, ["principals"]);
      for (const item of bound?.items ?? []) {
        const id = CODEHOST_PRINCIPAL.exec(String(plainValue(item)))?.[1];
        if (!id || has(principals, id)) continue;
        const binding = String((item.key as { value: unknown }).value);
        file.todo(
          bound!,
          ["principals"],
          binding,
          `add "codehost: { principals: { '${id}': { token: \${ENV_NAME} } } }" to daemon.yaml: "${binding}" posts as that identity`,
        );
      }
      // a pipeline whose `principal` binds a code-host principal posts as that one
      const principal = file.doc.get("principal");
      const postsAs = typeof principal === "string" ? bound?.get(principal) : undefined;
      if (defaultIdentity || CODEHOST_PRINCIPAL.test(String(postsAs ?? ""))) continue;
      const outputs = mapAt(file.doc, ["outputs"]);
      for (const item of outputs?.items ?? []) {
        const output = isMap(item.value) ? (item.value as YAMLMap) : undefined;
        const handler = output?.get("handler");
        if (typeof handler !== "string" || !handler.startsWith("codehost.")) continue;
        file.todo(
          output!,
          ["outputs", String((item.key as { value: unknown }).value)],
          "handler",
          `add "codehost: { token: \${ENV_NAME} }" to daemon.yaml: ${handler} posts as the default code-host identity`,
        );
      }
    }
  },
};
