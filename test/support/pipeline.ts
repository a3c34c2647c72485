import type { Pipeline } from "../../shared/config/types.ts";

/** A pipeline as the loader would produce it: no trigger, no steps, no targets, unless overridden. */
export function pipeline(name: string, overrides: Partial<Pipeline> = {}): Pipeline {
  return {
    name,
    file: `pipelines/${name}.yaml`,
    version: "1.0.0",
    companions: [],
    instructions: `Run ${name}.`,
    trigger: null,
    args: {},
    principals: {},
    outputs: {},
    env: {},
    setup: [],
    retainCheckout: true,
    checkout: { submodules: false, lfs: false, paths: [] },
    targets: [],
    knowledge: { method: "none" },
    ...overrides,
  };
}
