/**
 * Cursor pagination over the gateway's lists. Every list answers `{"object": "list", "data": [...],
 * "has_more": bool}`, newest first; the next page is asked for with `after=<cursor of the last item>`,
 * the cursor being the item's `id` (jobs, requests, ledger, deliveries, accounts) or `job_id` (gallery),
 * as each list documents it.
 *
 * A list call returns a {@link PagePromise}: awaited, it is the first {@link CursorPage}; iterated with
 * `for await`, it yields every item of every page, fetching the next page when one is used up.
 *
 * ```ts
 * const page = await client.jobs.list({ limit: 20 });       // one page: page.data, page.has_more
 * for await (const job of client.jobs.list({ status: "succeeded" })) console.log(job.id);
 * ```
 */

/** The shape every list answer has. */
export interface CursorList<Item> {
  object: "list";
  data: Item[];
  has_more: boolean;
}

/** Fetches the page after `after` (undefined: the first page). */
export type PageFetcher<Body extends CursorList<unknown>> = (after: string | undefined) => Promise<Body>;

/** One page of a list: the answer as received (`body`), its items and whether more follow. */
export class CursorPage<Body extends CursorList<unknown>> {
  /** The answer of the gateway, as the document types it (`{object, data, has_more}`). */
  readonly body: Body;
  private readonly fetchPage: PageFetcher<Body>;
  private readonly cursorOf: (item: Body["data"][number]) => string;

  constructor(body: Body, fetchPage: PageFetcher<Body>, cursorOf: (item: Body["data"][number]) => string) {
    this.body = body;
    this.fetchPage = fetchPage;
    this.cursorOf = cursorOf;
  }

  /** The items of this page, newest first. */
  get data(): Body["data"] {
    return this.body.data;
  }

  /** Whether the gateway said more items follow this page. */
  get has_more(): boolean {
    return this.body.has_more;
  }

  /** Whether a next page can be fetched (more follow and this page is not empty). */
  hasNextPage(): boolean {
    return this.body.has_more && this.body.data.length > 0;
  }

  /** The cursor to pass as `after` for the next page (the last item's), or null when none follows. */
  nextCursor(): string | null {
    return this.hasNextPage() ? this.cursorOf(this.body.data[this.body.data.length - 1]) : null;
  }

  /** The next page. Throws an `Error` when there is none ({@link hasNextPage} false). */
  async getNextPage(): Promise<CursorPage<Body>> {
    const after = this.nextCursor();
    if (after === null) throw new Error("No next page: check hasNextPage() first.");
    return new CursorPage(await this.fetchPage(after), this.fetchPage, this.cursorOf);
  }

  /** This page and each one after it. */
  async *iterPages(): AsyncGenerator<CursorPage<Body>> {
    yield this;
    let cursor = this.nextCursor();
    while (cursor !== null) {
      const page = new CursorPage(await this.fetchPage(cursor), this.fetchPage, this.cursorOf);
      yield page;
      cursor = page.nextCursor();
    }
  }

  /** Every item of this page and the pages after it. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Body["data"][number]> {
    for await (const page of this.iterPages()) for (const item of page.data as Body["data"][number][]) yield item;
  }

  /** The answer itself, so that `JSON.stringify(page)` is what the gateway sent. */
  toJSON(): Body {
    return this.body;
  }
}

/**
 * The result of a list call: a promise of its first page that is also an async iterable over every
 * item of every page. Nothing is fetched until it is awaited or iterated; the first page is fetched once.
 */
export class PagePromise<Body extends CursorList<unknown>> implements PromiseLike<CursorPage<Body>>, AsyncIterable<Body["data"][number]> {
  private readonly fetchPage: PageFetcher<Body>;
  private readonly cursorOf: (item: Body["data"][number]) => string;
  private first: Promise<CursorPage<Body>> | null = null;

  constructor(fetchPage: PageFetcher<Body>, cursorOf: (item: Body["data"][number]) => string, after?: string) {
    this.fetchPage = (cursor) => fetchPage(cursor ?? after);
    this.cursorOf = cursorOf;
  }

  private page(): Promise<CursorPage<Body>> {
    this.first ??= this.fetchPage(undefined).then((body) => new CursorPage(body, this.fetchPage, this.cursorOf));
    return this.first;
  }

  then<A = CursorPage<Body>, B = never>(
    onfulfilled?: ((value: CursorPage<Body>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.page().then(onfulfilled, onrejected);
  }

  /** Every item of every page, from the first. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Body["data"][number]> {
    yield* await this.page();
  }
}
