// svc runs its TypeScript sources with Node's own type stripping, so an older Node fails deep inside
// with ERR_UNKNOWN_FILE_EXTENSION. bin/svc.js imports this module first (static imports run in order),
// so an older Node stops here with one line that says what to do instead.
// Keep this file plain JavaScript that Node 14 can still parse: no type syntax, no import attributes.
// The floor is package.json's engines.node (.nvmrc and the pinned `node` dev dependency agree with it).
import { readFileSync } from "node:fs";

/** [major, minor, patch] of the first version written in `text`, or undefined */
function version(text) {
  const match = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(String(text));
  return match ? [Number(match[1]), Number(match[2] || 0), Number(match[3] || 0)] : undefined;
}

function below(running, floor) {
  for (let i = 0; i < 3; i++) if (running[i] !== floor[i]) return running[i] < floor[i];
  return false;
}

/** the floor as written in engines.node (">=24" gives "24"), or undefined when package.json says none */
function floorText() {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    const match = /\d+(?:\.\d+){0,2}/.exec(String(pkg.engines?.node ?? ""));
    return match ? match[0] : undefined;
  } catch {
    // without a readable package.json there is no floor to hold the user to; svc itself says what is wrong
    return undefined;
  }
}

const floor = floorText();
const running = process.versions.node;
if (floor && below(version(running), version(floor))) {
  const major = version(floor)[0];
  process.stderr.write(
    `svc needs Node ${floor} or newer, but this is Node ${running}. ` +
      `In a checkout, run \`npx svc …\` (after \`npm ci\`): it uses the Node ${major} the checkout pins. ` +
      `Otherwise install Node ${major}: \`nvm install ${major}\`, or from https://nodejs.org ` +
      `or your distribution if it packages Node ${major}.\n`,
  );
  process.exit(1);
}
