/**
 * The job progress display (packages/cli/src/progress.ts): plain lines off a terminal, one per change
 * worth reading; one line redrawn in place on a terminal; and the table and amount formatting.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MediaJob } from "../../packages/client/src/index.ts";
import { extensionOf, extensionOfFormat, keyValues, table } from "../../packages/cli/src/format.ts";
import { describeJob, ellipsize, formatElapsed, ProgressReporter, renderLine } from "../../packages/cli/src/progress.ts";

/** A job id as the gateway makes them (`job_` and 30 characters). */
const LONG_ID = "job_0Vc8E5adxjL7G4wpfJkslT99CQ5xrU";

function job(fields: Partial<MediaJob>): MediaJob {
  return {
    id: "job_test",
    object: "media.job",
    kind: "image",
    model: "imgA-v4",
    status: "pending",
    hold_usd: 0.054,
    cost_usd: null,
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
    output: null,
    error: null,
    idempotency_key: null,
    fallback_layer: 0,
    queue_position: null,
    progress: null,
    mode: "live",
    prompt: null,
    ...fields,
  };
}

/** A sink collecting writes, with a clock the test moves. */
function collector(isTTY: boolean, columns?: number) {
  const writes: string[] = [];
  let now = 1_000_000;
  return {
    writes,
    sink: { isTTY, columns, write: (s: string) => void writes.push(s) },
    clock: () => now,
    advance: (ms: number) => void (now += ms),
  };
}

describe("progress off a terminal: plain lines", () => {
  test("one line per status, queue position and tenth of progress, with the elapsed time", () => {
    const c = collector(false);
    const p = new ProgressReporter(c.sink, c.clock);
    p.update(job({ status: "pending", queue_position: 3 }));
    p.update(job({ status: "pending", queue_position: 3 })); // no change: no line
    c.advance(2000);
    p.update(job({ status: "pending", queue_position: 1 }));
    c.advance(1000);
    p.update(job({ status: "processing", progress: null }));
    p.update(job({ status: "processing", progress: 0.12 }));
    p.update(job({ status: "processing", progress: 0.15 })); // still 10%: no line
    p.update(job({ status: "processing", progress: 0.47 }));
    c.advance(62_000);
    p.update(job({ status: "succeeded", progress: null }));
    p.tick(); // nothing to animate off a terminal
    p.finish();
    assert.deepEqual(c.writes, [
      "job_test: pending, queue position 3 (00:00)\n",
      "job_test: pending, queue position 1 (00:02)\n",
      "job_test: processing (00:03)\n",
      "job_test: processing 10% (00:03)\n",
      "job_test: processing 40% (00:03)\n",
      "job_test: succeeded (01:05)\n",
    ]);
    assert.ok(c.writes.every((w) => !w.includes("\r") && !w.includes("\x1b")), "no control characters");
  });

  test("describeJob: status alone when the gateway sends no queue position or progress (before D30)", () => {
    assert.equal(describeJob(job({ status: "pending" })), "pending");
    assert.equal(describeJob(job({ status: "processing" })), "processing");
    assert.equal(describeJob(job({ status: "processing", progress: 1 })), "processing 100%");
    assert.equal(describeJob(job({ status: "processing", progress: 1.7 })), "processing 100%", "clamped");
    assert.equal(describeJob(job({ status: "failed" })), "failed");
  });
});

describe("progress on a terminal: one line redrawn", () => {
  test("each update and tick rewrites the line (carriage return, clear to end); finish ends it with a newline", () => {
    const c = collector(true, 100);
    const p = new ProgressReporter(c.sink, c.clock);
    p.tick(); // nothing drawn before the first job
    assert.equal(c.writes.length, 0);
    p.update(job({ status: "pending", queue_position: 2 }));
    c.advance(1500);
    p.tick();
    p.update(job({ status: "processing", progress: 0.5 }));
    p.finish();
    assert.equal(c.writes.length, 4);
    for (const w of c.writes.slice(0, 3)) {
      assert.ok(w.startsWith("\r") && w.endsWith("\x1b[K"), JSON.stringify(w));
    }
    assert.match(c.writes[0], /job_test {2}pending {5}#2 in queue {2}00:00/);
    assert.match(c.writes[1], /00:01/);
    assert.notEqual(c.writes[0][1], c.writes[1][1], "the spinner moved");
    assert.match(c.writes[2], /processing {2}\[█{12}░{12}\] {2}50% {2}00:01/);
    assert.equal(c.writes[3], "\n");
  });

  test("renderLine: a moving block while no progress is reported; cut to the terminal width", () => {
    const a = renderLine(job({ status: "processing" }), 0, 0);
    const b = renderLine(job({ status: "processing" }), 0, 5);
    assert.match(a, /\[████░{20}\]/);
    assert.match(b, /\[░{5}████░{15}\]/);
    assert.ok([...renderLine(job({ status: "processing", progress: 0.25 }), 0, 0, 30)].length <= 29);
    assert.equal([...renderLine(job({ status: "processing" }), 0, 0, 0)].length <= 79, true, "a width of 0 is taken as 80");
    assert.match(renderLine(job({ status: "pending" }), 0, 0), /waiting to start/);
  });

  test("renderLine fits every width from 40 columns: percentage and time always whole, never longer than the width less one", () => {
    const states: Partial<MediaJob>[] = [
      { status: "pending", queue_position: 12 },
      { status: "pending" },
      { status: "processing", progress: 0.76 },
      { status: "processing", progress: 1 },
      { status: "processing" },
      { status: "succeeded" },
    ];
    for (const state of states) {
      const j = job({ ...state, id: LONG_ID });
      for (const elapsed of [7_000, 3_723_000]) {
        for (let columns = 40; columns <= 200; columns++) {
          for (const frame of [0, 3, 17]) {
            const line = renderLine(j, elapsed, frame, columns);
            const where = `${JSON.stringify(state)} at ${columns} columns: ${JSON.stringify(line)}`;
            assert.ok([...line].length <= columns - 1, where);
            assert.ok(line.endsWith(`  ${formatElapsed(elapsed)}`), where);
            if (typeof state.progress === "number") assert.match(line, new RegExp(` ${Math.floor(state.progress * 100)}%  `), where);
            if (state.queue_position !== undefined) assert.match(line, /#12 in queue/, where);
            assert.ok(!line.includes("\n"), where);
          }
        }
      }
    }
  });

  test("renderLine: the bar shrinks, then the id is cut in the middle, then the bar goes (a real 34-character id)", () => {
    const j = job({ id: LONG_ID, status: "processing", progress: 0.76 });
    // 120 columns: everything, a 24-cell bar.
    assert.equal(renderLine(j, 7000, 0, 120), `⠋ ${LONG_ID}  processing  [${"█".repeat(18)}${"░".repeat(6)}]  76%  00:07`);
    // 80 columns (the report of issue 28): the whole id, a shorter bar, the percentage and the time.
    const at80 = renderLine(j, 7000, 0, 80);
    assert.equal(at80, `⠋ ${LONG_ID}  processing  [${"█".repeat(11)}${"░".repeat(4)}]  76%  00:07`);
    assert.equal([...at80].length, 79);
    // 60 columns: the id cut in the middle so that a bar of 8 cells stays.
    assert.equal(renderLine(j, 7000, 0, 60), "⠋ job_0Vc8E5…lT99CQ5xrU  processing  [██████░░]  76%  00:07");
    // 40 columns: no bar, the id cut.
    assert.equal(renderLine(j, 7000, 0, 40), "⠋ job_0V…Q5xrU  processing   76%  00:07");
    // 30 columns: the status goes; 20: only the spinner, the percentage and the time; 10: the time.
    assert.equal(renderLine(j, 7000, 0, 30), "⠋ job_0Vc…CQ5xrU   76%  00:07");
    assert.equal(renderLine(j, 7000, 0, 20), "⠋   76%  00:07");
    assert.equal(renderLine(j, 7000, 0, 10), "⠋ 00:07");
    // The moving block shrinks with the bar.
    assert.equal(renderLine(job({ id: LONG_ID, status: "processing" }), 7000, 0, 80), `⠋ ${LONG_ID}  processing  [████${"░".repeat(16)}]  00:07`);
    assert.equal(renderLine(job({ id: LONG_ID, status: "processing" }), 7000, 0, 60), "⠋ job_0Vc8E5adx…kslT99CQ5xrU  processing  [████░░░░]  00:07");
    // A pending job keeps its queue position; `waiting to start` goes before the id is cut short.
    assert.equal(renderLine(job({ id: LONG_ID, status: "pending", queue_position: 3 }), 7000, 0, 40), "⠋ job_…xrU  pending  #3 in queue  00:07");
    assert.equal(renderLine(job({ id: LONG_ID, status: "pending" }), 7000, 0, 60), "⠋ job_0Vc8E5…T99CQ5xrU  pending     waiting to start  00:07");
    assert.equal(renderLine(job({ id: LONG_ID, status: "pending" }), 7000, 0, 40), "⠋ job_0Vc8E5…lT99CQ5xrU  pending  00:07");
  });

  test("ellipsize keeps the start and the end", () => {
    assert.equal(ellipsize("job_abcdef", 20), "job_abcdef");
    assert.equal(ellipsize("job_abcdefghij", 9), "job_…ghij");
    assert.equal(ellipsize("abcdef", 1), "…");
    assert.equal(ellipsize("abcdef", 0), "");
  });

  test("formatElapsed", () => {
    assert.equal(formatElapsed(0), "00:00");
    assert.equal(formatElapsed(59_999), "00:59");
    assert.equal(formatElapsed(61_000), "01:01");
    assert.equal(formatElapsed(3_723_000), "1:02:03");
  });
});

describe("text formatting", () => {
  test("table: aligned columns, '-' for empty cells, no trailing spaces", () => {
    assert.equal(
      table(["ID", "NAME", "COST"], [["a", "Ünïcode", 0.5], ["bbbb", null, undefined]]),
      "ID    NAME     COST\na     Ünïcode  0.5\nbbbb  -        -\n",
    );
    assert.equal(table(["ID"], []), "ID\n");
  });

  test("keyValues leaves out absent values", () => {
    assert.equal(keyValues([["id", "x"], ["progress", null], ["status", "ok"]]), "id      x\nstatus  ok\n");
  });

  test("file extensions from MIME types and speech formats", () => {
    assert.equal(extensionOf("image/png"), "png");
    assert.equal(extensionOf("image/svg+xml"), "svg");
    assert.equal(extensionOf("video/mp4; codecs=avc1"), "mp4");
    assert.equal(extensionOf(undefined), "bin");
    assert.equal(extensionOfFormat(null), "mp3");
    assert.equal(extensionOfFormat("mp3_22050_32"), "mp3");
    assert.equal(extensionOfFormat("pcm_44100"), "pcm");
    assert.equal(extensionOfFormat("ulaw_8000"), "ulaw");
  });
});
