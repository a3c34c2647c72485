// the credential rules moved to shared/ so the ingress's /ask applies them too
export * from "../../shared/credentials/classify.ts";
