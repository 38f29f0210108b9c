/**
 * A raw HTTP/1.1 connection for tests that must send bytes no HTTP client would (malformed request
 * lines, bad chunk sizes, oversized heads) and see exactly what comes back: status, headers, body, and
 * whether the server then closed the connection.
 */
import { connect, type Socket } from "node:net";

/** One answer read off the connection: status, lower-cased headers and the body text. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export class RawConnection {
  private buffer = Buffer.alloc(0);
  private closed = false;
  private waiters: Array<() => void> = [];

  private readonly socket: Socket;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    // A reset after the server's answer (it closed with bytes of ours unread) ends the connection too.
    socket.on("error", () => {});
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Opens a connection to the gateway at `url` (its host and port). */
  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) });
      socket.once("connect", () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  /** Sends `data` as it is (written only while the connection is open). */
  write(data: string | Buffer): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(data);
  }

  /**
   * The next answer on the connection (an interim 1xx included), read by its `Content-Length`, its
   * chunks, or until the server closes the connection. Fails after `timeoutMs`.
   */
  async read(timeoutMs = 5000): Promise<RawAnswer> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answer = this.parse();
      if (answer) return answer;
      if (this.closed) throw new Error(`connection closed without a whole answer: ${JSON.stringify(this.buffer.toString("latin1").slice(0, 200))}`);
      if (!(await this.waitFor(deadline))) throw new Error("no answer in time");
    }
  }

  /** Whether the server closes the connection within `timeoutMs` (false: it is still open). */
  async closedByServer(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (!(await this.waitFor(deadline))) return false;
    }
    return true;
  }

  /** Closes the connection from this side. */
  destroy(): void {
    this.socket.destroy();
  }

  /** Sends one request and reads its answer (a client's shorthand). */
  static async exchange(url: string, request: string | Buffer): Promise<RawAnswer & { closed: boolean }> {
    const conn = await RawConnection.open(url);
    try {
      conn.write(request);
      const answer = await conn.read();
      return { ...answer, closed: await conn.closedByServer() };
    } finally {
      conn.destroy();
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Waits for data or close; false once `deadline` passed. */
  private waitFor(deadline: number): Promise<boolean> {
    const left = deadline - Date.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), left);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Takes one whole answer off the buffer, or null when it has not all arrived. */
  private parse(): RawAnswer | null {
    const headEnd = this.buffer.indexOf("\r\n\r\n");
    if (headEnd < 0) return null;
    const [statusLine, ...lines] = this.buffer.subarray(0, headEnd).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(":");
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const status = Number(statusLine.split(" ")[1]);
    const rest = this.buffer.subarray(headEnd + 4);
    let body: Buffer;
    let used: number;
    if (status < 200 || status === 204 || status === 304) {
      body = Buffer.alloc(0);
      used = 0;
    } else if (headers["content-length"] !== undefined) {
      const length = Number(headers["content-length"]);
      if (rest.length < length) return null;
      body = rest.subarray(0, length);
      used = length;
    } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const parts: Buffer[] = [];
      let at = 0;
      for (;;) {
        const lineEnd = rest.indexOf("\r\n", at);
        if (lineEnd < 0) return null;
        const size = parseInt(rest.subarray(at, lineEnd).toString("latin1"), 16);
        if (rest.length < lineEnd + 2 + size + 2) return null;
        parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
      used = at;
    } else {
      if (!this.closed) return null;
      body = rest;
      used = rest.length;
    }
    this.buffer = this.buffer.subarray(headEnd + 4 + used);
    return { status, headers, body: body.toString("utf8") };
  }
}
