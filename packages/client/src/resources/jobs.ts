/**
 * Media jobs (D3, D30): `client.jobs` lists, reads, cancels and follows them; `client.images`,
 * `client.videos` and `client.genmedia` submit them (202: the job, `pending`, its hold placed) and,
 * with `...AndWait`, follow them to their end.
 *
 * ```ts
 * const job = await client.images.generateAndWait({ model: "imgA-v4", prompt: "a fox", n: 2 });
 * for await (const j of client.jobs.list({ status: "succeeded" })) console.log(j.id, j.cost_usd);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { getJob, jobEvents, type MediaJob, type JobSubmitBody, submitAndWait, submitJob, type SubmitOptions, waitForJob, type WaitOptions } from "../jobs.ts";
import { PagePromise } from "../pagination.ts";
import { type Answer, type ListQuery, listQuery, type Query } from "../types.ts";

/** `client.jobs`: the caller's image, video and stored-audio jobs. */
export class Jobs {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `GET /v1/jobs` (D30): the caller's jobs, newest first, filtered by `status`, `kind`, `model`; `limit`
   * 1 to 100 per page (default 20). Await it for one page, or iterate it for every job of every page.
   */
  list(query: ListQuery<"listJobs"> = {}, options: RequestOptions = {}): PagePromise<Answer<"listJobs">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) => unwrap(this.client.raw.GET("/v1/jobs", { params: { query: listQuery<Query<"listJobs">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (job) => job.id,
      after,
    );
  }

  /** `GET /v1/jobs/{id}`: one job (D3). Throws `NotFoundError` (404 `job_not_found`) for an unknown or another user's job. */
  async get(id: string, options: RequestOptions = {}): Promise<MediaJob> {
    return (await getJob(this.client, id, options)).job;
  }

  /**
   * `POST /v1/jobs/{id}/cancel` (D30): a pending or processing job ends `failed` with `error.code`
   * `canceled` and its whole hold released; resolves with that job. A terminal job: `ConflictError` (409
   * `job_not_cancelable`); unknown or another user's: `NotFoundError` (404 `job_not_found`). Not retried
   * (a POST without idempotency key).
   */
  async cancel(id: string, options: RequestOptions = {}): Promise<MediaJob> {
    return unwrap(this.client.raw.POST("/v1/jobs/{id}/cancel", { params: { path: { id } }, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/jobs/{id}/events` (D30): the job's states as they change, ending after a terminal one. */
  events(id: string, options: RequestOptions = {}): AsyncGenerator<MediaJob> {
    return jobEvents(this.client, id, options);
  }

  /** Follows a job (the object a submit answered, or its id) to a terminal status; see `waitForJob`. */
  wait(jobOrId: MediaJob | string, options: WaitOptions = {}): Promise<MediaJob> {
    return waitForJob(this.client, jobOrId, options);
  }
}

/** `client.images`: image jobs (`POST /v1/images/generations`). */
export class Images {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * Submits an image job; resolves with it (`pending`, its hold placed). Retried only when `body` has an
   * `idempotency_key`. Throws `BadRequestError` (400 `invalid_model`...), `InsufficientBalanceError`
   * (402), `RateLimitError` (429).
   */
  generate(body: JobSubmitBody<"/v1/images/generations">, options: RequestOptions = {}): Promise<MediaJob> {
    return submitJob(this.client, "/v1/images/generations", body, options);
  }

  /** Submits an image job and follows it to its end (see `submitAndWait`): the terminal job, whatever its status. */
  generateAndWait(body: JobSubmitBody<"/v1/images/generations">, options: SubmitOptions = {}): Promise<MediaJob> {
    return submitAndWait(this.client, "/v1/images/generations", body, options);
  }
}

/** `client.videos`: video jobs (`POST /v1/videos/generations`). */
export class Videos {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** Submits a video job; resolves with it (`pending`). Retried only when `body` has an `idempotency_key`. */
  generate(body: JobSubmitBody<"/v1/videos/generations">, options: RequestOptions = {}): Promise<MediaJob> {
    return submitJob(this.client, "/v1/videos/generations", body, options);
  }

  /** Submits a video job and follows it to its end: the terminal job, whatever its status. */
  generateAndWait(body: JobSubmitBody<"/v1/videos/generations">, options: SubmitOptions = {}): Promise<MediaJob> {
    return submitAndWait(this.client, "/v1/videos/generations", body, options);
  }
}

/** `client.genmedia`: jobs of any kind by model (`POST /v1/genmedia/jobs`). */
export class Genmedia {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** Submits a job; resolves with it (`pending`). Retried only when `body` has an `idempotency_key`. */
  submit(body: JobSubmitBody<"/v1/genmedia/jobs">, options: RequestOptions = {}): Promise<MediaJob> {
    return submitJob(this.client, "/v1/genmedia/jobs", body, options);
  }

  /** Submits a job and follows it to its end: the terminal job, whatever its status. */
  submitAndWait(body: JobSubmitBody<"/v1/genmedia/jobs">, options: SubmitOptions = {}): Promise<MediaJob> {
    return submitAndWait(this.client, "/v1/genmedia/jobs", body, options);
  }
}
