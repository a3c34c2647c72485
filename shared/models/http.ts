import got from "got";
import { ModelDnsCache } from "./dns-cache.ts";

/** The model hosts this process resolved, for every model call it makes (docs/knowledge.md). */
export const modelDns = new ModelDnsCache();

/** got for calls to model APIs: the rewrite, /ask, the openai runtime and the credential probes. */
export const modelHttp = got.extend({ dnsCache: modelDns });
