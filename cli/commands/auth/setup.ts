import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { Command } from "@oclif/core";
import { DaemonClient, DaemonError, DaemonUnreachableError, daemonUrl } from "../../client.ts";
import { saveCredential } from "../../credentials.ts";

export interface SetupJson {
  daemon: string;
  owner: string;
  scopes: string[];
  saved: string;
}

async function readToken(): Promise<string> {
  if (!process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) text += chunk;
    return text.trim();
  }
  // typed at a terminal: read it without echo
  const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
  process.stderr.write("token: ");
  const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
  const line = await new Promise<string>((resolve) => rl.question("", resolve));
  rl.close();
  process.stderr.write("\n");
  return line.trim();
}

export default class AuthSetup extends Command {
  static override summary = "Authenticate the CLI to the daemon";
  static override description =
    "Reads a token (piped on stdin, or typed without echo), checks it against the daemon at SVC_DAEMON_URL " +
    "(GET /whoami), and saves it for that daemon in the user's configuration directory " +
    "($XDG_CONFIG_HOME/svc/credentials.json, else ~/.config/svc/credentials.json) with mode 0600. Later " +
    "commands send it automatically. The environment variable SVC_MANAGEMENT_TOKEN is not read. A local " +
    "install (no auth.tokens, loopback bind) needs no token.";
  static override examples = [
    "<%= config.bin %> auth setup",
    "<%= config.bin %> token issue --json | jq -r .token | <%= config.bin %> auth setup",
    "SVC_DAEMON_URL=https://svc.example.com <%= config.bin %> auth setup < token.txt",
  ];
  static override enableJsonFlag = true;

  async run(): Promise<SetupJson> {
    await this.parse(AuthSetup);
    let url: string;
    try {
      url = daemonUrl();
    } catch (error) {
      this.error((error as Error).message, { exit: 1 });
    }
    const token = await readToken();
    if (!token)
      this.error("no token given: pipe one in or type it at the prompt (`svc token issue` makes one)", {
        exit: 2,
      });
    if (/\s/.test(token)) this.error("the token must be a single word without spaces", { exit: 2 });
    let who: { owner: string; scopes: string[] };
    try {
      who = await new DaemonClient(url, token).get("/whoami");
    } catch (error) {
      if (error instanceof DaemonError && error.status === 401) {
        this.error(`the daemon at ${url} does not accept this token; nothing was saved`, { exit: 1 });
      }
      if (error instanceof DaemonError || error instanceof DaemonUnreachableError) {
        this.error(`${error.message}; nothing was saved`, { exit: 1 });
      }
      throw error;
    }
    const saved = await saveCredential(url, { token, owner: who.owner, savedAt: new Date().toISOString() });
    if (!this.jsonEnabled()) {
      this.log(`authenticated to ${url} as ${who.owner} (scopes: ${who.scopes.join(" ") || "none"})`);
      this.log(`saved to ${saved}`);
    }
    return { daemon: url, owner: who.owner, scopes: who.scopes, saved };
  }
}
