/**
 * A local HTTP server with scripted answers, for transport behaviour a real broker cannot be made
 * to show on demand (5xx, dropped connections, slow answers).
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request as the fake server saw it. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** How to answer one request. */
export type Answer =
  { status: number; body?: unknown; headers?: Record<string, string>; delayMillis?: number } | { drop: true };

/** A fake server answering from a script; the last answer repeats. */
export class FakeServer {
  readonly requests: SeenRequest[] = [];
  private server: Server | undefined;
  private answers: Answer[] = [];

  /** Starts listening on a free loopback port. */
  async start(): Promise<string> {
    this.server = createServer((request, response) => this.handle(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Sets the answers for the next requests, in order. */
  script(...answers: Answer[]): void {
    this.answers = answers;
  }

  /** Stops the server and drops open connections. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      this.requests.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      const answer = this.answers.length > 1 ? this.answers.shift() : this.answers[0];
      if (!answer || "drop" in answer) {
        request.socket.destroy();
        return;
      }
      const send = () => {
        const text =
          answer.body === undefined ? "" : typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
        response.writeHead(answer.status, { "Content-Type": "application/json", ...answer.headers });
        response.end(text);
      };
      if (answer.delayMillis) setTimeout(send, answer.delayMillis);
      else send();
    });
  }
}
