import { FakeAnthropic } from "./fake-anthropic.ts";
import { describeAgentRuntime } from "./runtime-suite.ts";

describeAgentRuntime("claude-code", new FakeAnthropic(), "");
