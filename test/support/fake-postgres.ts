import type { AddressInfo } from "node:net";
import { createServer, type Server, type Socket } from "node:net";

/**
 * A server on loopback that speaks enough of the PostgreSQL wire protocol (v3) to be a PostgreSQL of
 * any version to a real client (node-postgres, psql): the startup handshake with trust
 * authentication and the usual parameter statuses, and the simple query protocol answering
 * `SHOW server_version` and `SHOW server_version_num` as a server of `version` does. Every other
 * statement gets the error a server gives a statement it cannot run (SQLSTATE 0A000), and the
 * extended protocol is refused the same way, so a client that goes further than asking the
 * version fails loudly. It stands in for the old servers this machine cannot install.
 */
export interface FakePostgres {
  url: string;
  /** every statement asked, in order */
  statements: string[];
  close(): Promise<void>;
}

export async function startFakePostgres(version: string): Promise<FakePostgres> {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  const versionNum = String(major * 10_000 + minor);
  const statements: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {}); // a client that goes away mid-message: nothing to answer
    let buffer = Buffer.alloc(0);
    let started = false;
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!started) {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          const code = buffer.readInt32BE(4);
          buffer = buffer.subarray(length);
          if (code === 80877103 || code === 80877104) {
            socket.write("N"); // SSL or GSS encryption asked: not offered, as a plain server answers
            continue;
          }
          started = true;
          socket.write(
            Buffer.concat([
              message("R", int32(0)), // AuthenticationOk: trust
              parameter("server_version", version),
              parameter("server_encoding", "UTF8"),
              parameter("client_encoding", "UTF8"),
              parameter("DateStyle", "ISO, MDY"),
              parameter("integer_datetimes", "on"),
              parameter("standard_conforming_strings", "on"),
              message("K", Buffer.concat([int32(4242), int32(1)])),
              ready(),
            ]),
          );
          continue;
        }
        if (buffer.length < 5) return;
        const type = String.fromCharCode(buffer[0]!);
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) return;
        const body = buffer.subarray(5, 1 + length);
        buffer = buffer.subarray(1 + length);
        if (type === "X") {
          socket.end();
          return;
        }
        if (type === "Q") {
          const text = body.subarray(0, body.indexOf(0)).toString("utf8");
          statements.push(text);
          socket.write(answer(text, version, versionNum));
        } else if (type === "P") {
          statements.push(
            body.subarray(body.indexOf(0) + 1, body.indexOf(0, body.indexOf(0) + 1)).toString(),
          );
          socket.write(error("0A000", "this server answers only the simple query protocol"));
        } else if (type === "S") {
          socket.write(ready());
        }
        // Bind, Describe, Execute, Flush after a refused Parse: skipped until Sync, as a server does
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `postgres://svc@127.0.0.1:${port}/svc`,
    statements,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function answer(text: string, version: string, versionNum: string): Buffer {
  const show = /^\s*SHOW\s+(server_version(?:_num)?)\s*;?\s*$/i.exec(text);
  if (!show)
    return Buffer.concat([error("0A000", `not supported by this server: ${text.slice(0, 80)}`), ready()]);
  const name = show[1]!.toLowerCase();
  const value = name === "server_version" ? version : versionNum;
  const field = Buffer.concat([
    cstring(name),
    int32(0), // table oid
    int16(0), // column number
    int32(25), // type oid: text
    int16(-1), // type length: variable
    int32(-1), // type modifier
    int16(0), // format: text
  ]);
  const data = Buffer.from(value, "utf8");
  return Buffer.concat([
    message("T", Buffer.concat([int16(1), field])),
    message("D", Buffer.concat([int16(1), int32(data.length), data])),
    message("C", cstring("SHOW")),
    ready(),
  ]);
}

function error(sqlstate: string, text: string): Buffer {
  return message(
    "E",
    Buffer.concat([
      Buffer.from("S"),
      cstring("ERROR"),
      Buffer.from("V"),
      cstring("ERROR"),
      Buffer.from("C"),
      cstring(sqlstate),
      Buffer.from("M"),
      cstring(text),
      Buffer.from([0]),
    ]),
  );
}

const ready = () => message("Z", Buffer.from("I"));
const parameter = (name: string, value: string) =>
  message("S", Buffer.concat([cstring(name), cstring(value)]));

function message(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(type), int32(body.length + 4), body]);
}

function cstring(text: string): Buffer {
  return Buffer.concat([Buffer.from(text, "utf8"), Buffer.from([0])]);
}

function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value);
  return buffer;
}

function int16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeInt16BE(value);
  return buffer;
}
