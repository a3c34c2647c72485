import { readFileSync } from "node:fs";
import { budgetClock } from "../../../worker/run/budget-periods.ts";

/**
 * Loaded into a real worker process with NODE_OPTIONS=--import: the budget periods' clock reads
 * the time from the file SVC_TEST_BUDGET_CLOCK names, so a test moves it past midnight UTC by
 * writing the file instead of waiting. Nothing else of the worker sees this clock.
 */
const file = process.env.SVC_TEST_BUDGET_CLOCK;
if (file) budgetClock.now = () => new Date(readFileSync(file, "utf8").trim());
