/**
 * The one "wait for the first chunk" helper (src/upstreams/first-chunk.ts), used by the audio router's
 * failover (D27) and by the speech service before it charges: what it returns, what it throws, and that
 * closing the returned stream closes the upstream stream and runs the end hook once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { firstChunkThen } from "../../src/upstreams/first-chunk.ts";
import { UpstreamError } from "../../src/upstreams/types.ts";

/** A stream of `chunks` (then `fail`, when given) that records whether it was closed. */
function source(chunks: number[], fail?: Error): { stream: AsyncIterable<Uint8Array>; closed: () => boolean } {
  let closed = false;
  async function* gen(): AsyncGenerator<Uint8Array> {
    try {
      for (const c of chunks) yield new Uint8Array([c]);
      if (fail) throw fail;
    } finally {
      closed = true;
    }
  }
  return { stream: gen(), closed: () => closed };
}

test("every chunk, the first one first; the end hook runs once at the end", async () => {
  const src = source([1, 2, 3]);
  let ends = 0;
  const rest = await firstChunkThen(src.stream, () => ends++, "speech");
  assert.equal(ends, 0);
  const seen: number[] = [];
  for await (const c of rest) seen.push(c[0]!);
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(ends, 1);
  assert.equal((await rest.next()).done, true);
  assert.equal(ends, 1);
});

test("a failure before the first chunk is thrown as it is, and an empty stream is a retryable UpstreamError", async () => {
  let ends = 0;
  const boom = new Error("boom");
  await assert.rejects(firstChunkThen(source([], boom).stream, () => ends++, "speech"), boom);
  assert.equal(ends, 1);
  await assert.rejects(firstChunkThen(source([]).stream, () => ends++, "speech"), (err: unknown) => {
    assert.ok(err instanceof UpstreamError);
    assert.equal(err.retryable, true);
    assert.match(err.message, /^speech: the stream ended before any audio/);
    return true;
  });
  assert.equal(ends, 2);
});

test("a failure after the first chunk reaches the reader and runs the end hook", async () => {
  let ends = 0;
  const boom = new Error("late");
  const rest = await firstChunkThen(source([1], boom).stream, () => ends++, "speech");
  assert.equal((await rest.next()).value?.[0], 1);
  await assert.rejects(rest.next(), boom);
  assert.equal(ends, 1);
});

test("closing the stream, before reading it or with a break, closes the upstream stream and runs the end hook once", async () => {
  let ends = 0;
  const unread = source([1, 2]);
  const a = await firstChunkThen(unread.stream, () => ends++, "speech");
  await a.return();
  assert.equal(unread.closed(), true);
  assert.equal(ends, 1);
  const read = source([1, 2, 3]);
  const b = await firstChunkThen(read.stream, () => ends++, "speech");
  for await (const c of b) if (c[0] === 2) break;
  assert.equal(read.closed(), true);
  assert.equal(ends, 2);
  await b.return();
  assert.equal(ends, 2);
});
