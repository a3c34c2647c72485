import type Docker from "dockerode";

export interface NumericUser {
  uid: number;
  gid: number;
}

/**
 * The uid and gid a container's processes will run as, read from the created container before it
 * starts, so the run's folders can be handed to that user while no process of the container is
 * alive. `user` is what the container was created with (`<user>[:<group>]`, names or numbers): a
 * name, or a uid without a group, is looked up in the image's /etc/passwd and /etc/group as the
 * engine itself does (a uid that has no entry gets group 0).
 */
export async function containerUser(container: Docker.Container, user: string): Promise<NumericUser> {
  const [name = "", group] = user.split(":");
  const numeric = (text: string | undefined) =>
    text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
  let uid = numeric(name);
  let gid = numeric(group);
  if (uid === undefined || (gid === undefined && group === undefined)) {
    const passwd = await imageFile(container, "/etc/passwd");
    const entry = passwd
      ?.split("\n")
      .map((line) => line.split(":"))
      .find((fields) => (uid === undefined ? fields[0] === name : Number(fields[2]) === uid));
    if (uid === undefined) {
      if (!entry) throw new Error(`the image has no user named ${name} in /etc/passwd`);
      uid = Number(entry[2]);
    }
    if (group === undefined) gid = entry ? Number(entry[3]) : 0;
  }
  if (gid === undefined) {
    const groups = await imageFile(container, "/etc/group");
    const entry = groups
      ?.split("\n")
      .map((line) => line.split(":"))
      .find((fields) => fields[0] === group);
    if (!entry) throw new Error(`the image has no group named ${group} in /etc/group`);
    gid = Number(entry[2]);
  }
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0)
    throw new Error(`the container's user ${user} is not a non-root user (uid ${uid}, gid ${gid})`);
  return { uid, gid: gid! };
}

/** One file of a created container's filesystem (the engine's archive API, a tar of one entry); undefined when it is none. */
async function imageFile(container: Docker.Container, path: string): Promise<string | undefined> {
  let stream: NodeJS.ReadableStream;
  try {
    stream = await container.getArchive({ path });
  } catch {
    return undefined; // the image has no such file: the lookup reports what it could not find
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  const tar = Buffer.concat(chunks);
  // a ustar header: the type at 156 ('0' or NUL for a regular file), the size in octal at 124
  const type = tar[156];
  if (tar.length < 512 || (type !== 0x30 && type !== 0)) return undefined;
  const size = Number.parseInt(tar.subarray(124, 136).toString("latin1").replace(/\0.*$/, "").trim(), 8);
  return tar.subarray(512, 512 + size).toString("utf8");
}
