/**
 * The job feed (jobs/changes.ts, D30) is an instance per gateway: a change published on one feed wakes
 * only its own listeners, and a runner announces on the feed it was given.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createJobChangeFeed, type JobChange } from "../../src/jobs/changes.ts";
import { JobRunner } from "../../src/jobs/runner.ts";
import type { RunnerDeps } from "../../src/jobs/runner.ts";

describe("job change feeds", () => {
  test("two feeds never hear each other's changes", () => {
    const a = createJobChangeFeed();
    const b = createJobChangeFeed();
    const heardA: JobChange[] = [];
    const heardB: JobChange[] = [];
    const offA = a.subscribe("acct_1", (c) => heardA.push(c));
    const offB = b.subscribeAll((c) => heardB.push(c));
    const change: JobChange = { accountId: "acct_1", jobId: "job_1", ended: true, by: null };
    a.publish(change);
    assert.deepEqual(heardA, [change]);
    assert.deepEqual(heardB, [], "the other gateway's feed stays silent");
    b.publish({ ...change, jobId: "job_2" });
    assert.equal(heardA.length, 1);
    assert.equal(heardB.length, 1);
    offA();
    offB();
    a.publish(change);
    assert.equal(heardA.length, 1, "unsubscribed");
  });

  test("a runner announces on the feed it is given", () => {
    const feed = createJobChangeFeed();
    // Construction touches none of its dependencies: only start() does.
    const deps = { changes: feed } as unknown as RunnerDeps;
    assert.equal(new JobRunner(deps).changes, feed);
  });
});
