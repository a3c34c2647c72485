import { FakeResponses } from "./fake-responses.ts";
import { describeAgentRuntime } from "./runtime-suite.ts";

describeAgentRuntime("codex", new FakeResponses(), "/v1");
