/**
 * Runs the real gateway as a child process (`node src/main.ts serve|worker`), for tests that kill or
 * restart processes. Loopback only.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** Output so far (stdout and stderr). */
  output(): string;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
}

/** Starts `node src/main.ts <role>` with `env`; for `serve`, waits until `/healthz` answers. */
export async function spawnGateway(role: "serve" | "worker", env: Record<string, string>): Promise<GatewayProcess> {
  const port = env.PORT ?? String(await freePort());
  const child = spawn(process.execPath, ["src/main.ts", role], {
    env: { ...process.env, LOG_LEVEL: "warn", HOST: "127.0.0.1", REGISTRATIONS_PER_ADDRESS: "1000000000", ...env, PORT: port },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  if (role === "serve") {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`gateway exited: ${out}`);
      try {
        if ((await fetch(`${url}/healthz`)).ok) break;
      } catch {
        // not up yet
      }
      if (i > 200) throw new Error(`gateway did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    child,
    url,
    output: () => out,
    async kill() {
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
