/**
 * The guest agent's file endpoints, served by the REAL qemu-ga (its files are the test machine's):
 * `agent/file-read` and `agent/file-write` as qemu-server PVE/API2/Qemu/Agent.pm does them —
 * file-read opens, seeks to `offset`, reads in 1 MiB agent calls until `count` bytes or the end,
 * and answers `content` (the bytes one character each, or with `decode=0` the agent's base64
 * pieces joined as they came), `bytes-read`, and `truncated: 1` when the end was not reached;
 * file-write opens `wb` (truncating), writes one `content` (base64-encoded by PVE unless
 * `encode=0`), closes, and answers null. An agent error is `Agent error: <desc>`
 * (PVE::QemuServer::Agent::check_agent_error).
 *
 * @module
 */

import { qemuGuest, type Route } from "./context.ts";
import { ApiError } from "./http.ts";
import { agentCall, readyAgent } from "./routes_agent.ts";

/** Agent.pm `$MAX_READ_SIZE`. */
const MAX_READ = 16 * 1024 * 1024;
/** Agent.pm file-read's `$read_size` per agent call. */
const READ_SIZE = 1024 * 1024;

function bytesOfBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Perl's view of bytes as a string: one character per byte (what JSON then encodes). */
function oneCharPerByte(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    out += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return out;
}

export const agentFileRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/agent/file-read",
    privilege: "VM.GuestAgent.FileRead|VM.GuestAgent.Unrestricted",
    params: {
      file: { type: "string" },
      count: { type: "integer", optional: true, minimum: 1, maximum: MAX_READ },
      decode: { type: "boolean", optional: true },
      offset: { type: "integer", optional: true, minimum: 0 },
    },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const agent = await readyAgent(ctx, g);
      const count = (ctx.params.count as number | undefined) ?? MAX_READ;
      const decode = ctx.params.decode !== false;
      const offset = (ctx.params.offset as number | undefined) ?? 0;
      const handle = await agentCall(g, agent, "guest-file-open", {
        path: ctx.params.file,
      });
      try {
        if (offset > 0) {
          await agentCall(g, agent, "guest-file-seek", {
            handle,
            offset,
            whence: "set",
          });
        }
        let read = 0;
        let eof = false;
        const pieces: string[] = [];
        const bytes: Uint8Array[] = [];
        while (read < count && !eof) {
          const chunk = Math.min(READ_SIZE, count - read);
          const res = await agentCall(g, agent, "guest-file-read", {
            handle,
            count: chunk,
          }) as {
            count: number;
            "buf-b64": string;
            eof?: boolean;
          };
          pieces.push(res["buf-b64"]);
          bytes.push(bytesOfBase64(res["buf-b64"]));
          read += res.count;
          eof = res.eof === true;
        }
        const content = decode
          ? bytes.map(oneCharPerByte).join("")
          : pieces.join("");
        const result: Record<string, unknown> = { content, "bytes-read": read };
        if (!eof) result.truncated = 1;
        return result;
      } finally {
        await agentCall(g, agent, "guest-file-close", { handle }).catch(
          () => {},
        );
      }
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/agent/file-write",
    privilege: "VM.GuestAgent.FileWrite|VM.GuestAgent.Unrestricted",
    params: {
      file: { type: "string" },
      content: { type: "string", maxLength: 61440 },
      encode: { type: "boolean", optional: true },
    },
    handler: async (ctx) => {
      const g = qemuGuest(ctx);
      const agent = await readyAgent(ctx, g);
      const content = ctx.params.content as string;
      let buf = content;
      if (ctx.params.encode !== false) {
        // encode_base64 of a Perl string: characters above U+00FF cannot be bytes.
        if ([...content].some((c) => c.codePointAt(0)! > 0xff)) {
          throw new ApiError(
            500,
            "Wide character in subroutine entry at /usr/share/perl5/PVE/API2/Qemu/Agent.pm line 510.",
          );
        }
        buf = btoa(content);
      }
      const handle = await agentCall(g, agent, "guest-file-open", {
        path: ctx.params.file,
        mode: "wb",
      });
      try {
        await agentCall(g, agent, "guest-file-write", {
          handle,
          "buf-b64": buf,
        });
      } finally {
        await agentCall(g, agent, "guest-file-close", { handle }).catch(
          () => {},
        );
      }
      return null;
    },
  },
];
