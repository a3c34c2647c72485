import type { Step } from "./step.ts";
import { v0_3_7 } from "./v0-3-7.ts";
import { v0_5_0 } from "./v0-5-0.ts";
import { v0_5_1 } from "./v0-5-1.ts";
import { v0_6_1 } from "./v0-6-1.ts";
import { v0_6_5 } from "./v0-6-5.ts";
import { v0_7_0 } from "./v0-7-0.ts";
import { v0_8_0 } from "./v0-8-0.ts";
import { v0_9_0 } from "./v0-9-0.ts";
import { v0_9_2 } from "./v0-9-2.ts";
import { v0_10_0 } from "./v0-10-0.ts";
import { v0_11_0 } from "./v0-11-0.ts";
import { v0_12_0 } from "./v0-12-0.ts";
import { v0_14_0 } from "./v0-14-0.ts";

/**
 * Every release of "Changes by release" that changed the configuration, oldest first: a later step
 * sees what an earlier one wrote (0.3.7 moves `rewrite` into `knowledge.retrieval`, 0.10.0 then
 * turns its `target` into `targets`). Releases not listed changed no configuration file.
 */
export const STEPS: readonly Step[] = [
  v0_3_7,
  v0_5_0,
  v0_5_1,
  v0_6_1,
  v0_6_5,
  v0_7_0,
  v0_8_0,
  v0_9_0,
  v0_9_2,
  v0_10_0,
  v0_11_0,
  v0_12_0,
  v0_14_0,
];
