/**
 * Blob storage in an S3-compatible bucket (docs/architecture.md "storage/": S3 at scale), selected by
 * `STORAGE_URL=s3://bucket/prefix` (decision D11). Blob key `audio/job_abc.mp3` is the object
 * `<prefix>/audio/job_abc.mp3` of the bucket. The key rules are those of blob-store.ts.
 *
 * This module reads no environment variable (only config.ts does): the connection settings arrive as
 * {@link S3Options}. config.ts fills them from these variables (all optional):
 *
 * | variable                | option            | meaning                                                    |
 * | ----------------------- | ----------------- | ---------------------------------------------------------- |
 * | `S3_ENDPOINT`           | `endpoint`        | base URL of an S3-compatible server (MinIO, R2, ...); unset = AWS |
 * | `AWS_REGION`            | `region`          | signing region, default `us-east-1`                        |
 * | `AWS_ACCESS_KEY_ID`     | `accessKeyId`     | static credentials, together with the secret              |
 * | `AWS_SECRET_ACCESS_KEY` | `secretAccessKey` |                                                            |
 * | `AWS_SESSION_TOKEN`     | `sessionToken`    | only with static temporary credentials                     |
 * | `S3_FORCE_PATH_STYLE`   | `forcePathStyle`  | `true`/`false`; default true with `S3_ENDPOINT`, else false |
 *
 * Without static keys the AWS SDK's default credential chain applies (its own environment variables,
 * shared config files, web identity, container and instance roles).
 */
import { createRequire } from "node:module";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type * as S3Sdk from "@aws-sdk/client-s3";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import type * as S3Storage from "@aws-sdk/lib-storage";
import {
  assertBlobKey,
  assertContentType,
  type BlobInfo,
  type BlobRead,
  type BlobStore,
  type ByteRange,
  isValidBlobKey,
} from "./blob-store.ts";

/** The AWS SDK modules an S3 store uses. */
interface AwsSdk {
  s3: typeof S3Sdk;
  storage: typeof S3Storage;
}
let awsSdk: AwsSdk | null = null;
/**
 * The AWS SDK, loaded (its CommonJS build) when the first S3 store is built: a gateway storing on local
 * disk never pays the SDK's memory (about 10 MB of idle RSS).
 */
function loadAwsSdk(): AwsSdk {
  if (awsSdk === null) {
    const require = createRequire(import.meta.url);
    awsSdk = { s3: require("@aws-sdk/client-s3") as typeof S3Sdk, storage: require("@aws-sdk/lib-storage") as typeof S3Storage };
  }
  return awsSdk;
}

/**
 * Connection settings of an {@link S3BlobStore}; an empty string counts as not given. The environment
 * variable each option comes from is listed in this module's header.
 */
export interface S3Options {
  /** Base URL of an S3-compatible server, e.g. `http://127.0.0.1:9000`; absent for AWS S3 itself. */
  endpoint?: string;
  /** Signing region; default `us-east-1`. */
  region?: string;
  /** Static access key id; must come with `secretAccessKey`. Absent: the SDK's default credential chain. */
  accessKeyId?: string;
  /** Static secret access key; must come with `accessKeyId`. */
  secretAccessKey?: string;
  /** Session token of temporary static credentials; only used with the two keys. */
  sessionToken?: string;
  /** Path-style URLs (`endpoint/bucket/key`); default true when `endpoint` is given, else false. */
  forcePathStyle?: boolean;
}

/** Where an `s3://` STORAGE_URL points. */
export interface S3Location {
  /** Bucket name (3 to 63 of `[a-z0-9.-]`, starting and ending with a letter or digit). */
  bucket: string;
  /** Key prefix without leading or trailing `/` (`""` for none), e.g. `gateway/blobs`. */
  prefix: string;
}

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Parses `s3://bucket` or `s3://bucket/prefix` (a trailing `/` is ignored). The prefix follows the blob
 * key rules of blob-store.ts. Throws an Error naming `STORAGE_URL` for anything else (no user, port, query or
 * fragment).
 */
export function parseS3Url(storageUrl: string): S3Location {
  const bad = (why: string) => new Error(`STORAGE_URL '${storageUrl}' is not a usable S3 URL: ${why}.`);
  if (!storageUrl.startsWith("s3://")) throw bad("it must start with 's3://'");
  const rest = storageUrl.slice("s3://".length);
  const slash = rest.indexOf("/");
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = slash < 0 ? "" : rest.slice(slash + 1).replace(/\/+$/, "");
  if (!BUCKET_NAME.test(bucket) || bucket.includes("..")) {
    throw bad(`'${bucket}' is not a valid bucket name (3 to 63 of a-z, 0-9, '.', '-')`);
  }
  if (prefix !== "" && !isValidBlobKey(prefix)) {
    throw bad(`the prefix '${prefix}' must be '/'-separated segments of [A-Za-z0-9._-] not starting with '.'`);
  }
  return { bucket, prefix };
}

/** `$metadata.httpStatusCode` and `name` of an SDK error (or of anything else: undefined). */
function s3ErrorOf(err: unknown): { status: number | undefined; name: string | undefined } {
  const e = err as { name?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  const status = e?.$metadata?.httpStatusCode;
  return {
    status: typeof status === "number" ? status : undefined,
    name: typeof e?.name === "string" ? e.name : undefined,
  };
}

function unquote(etag: string | undefined): string {
  if (etag === undefined) return "";
  return etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
}

const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/**
 * Bytes `start..end` (inclusive, offsets into `body`) of a stream, for a server that answered a range
 * request with more than the range. Destroys `body` when done or abandoned.
 */
async function* sliceOf(body: Readable, start: number, end: number): AsyncGenerator<Uint8Array> {
  let offset = 0;
  try {
    for await (const chunk of body) {
      const bytes = chunk as Uint8Array;
      const from = Math.max(0, start - offset);
      const to = Math.min(bytes.byteLength, end + 1 - offset);
      if (from < to) yield bytes.subarray(from, to);
      offset += bytes.byteLength;
      if (offset > end) return;
    }
  } finally {
    body.destroy();
  }
}

/** Checks the chunks of a body iterable and counts its bytes into `counter.size`. */
async function* checkedChunks(
  body: AsyncIterable<Uint8Array>,
  counter: { size: number },
): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    if (!(chunk instanceof Uint8Array)) throw new TypeError("Blob body chunks must be Uint8Array.");
    counter.size += chunk.byteLength;
    yield chunk;
  }
}

/** Multipart part size for streamed bodies, bytes (the S3 minimum); at most two parts are buffered. */
const PART_SIZE = 5 * 1024 * 1024;

/**
 * Blobs as objects of one S3 bucket under a key prefix, through `@aws-sdk/client-s3`.
 *
 * - `put`: a Uint8Array is one PutObject; an AsyncIterable streams through `@aws-sdk/lib-storage`'s
 *   Upload (one PutObject up to {@link PART_SIZE} bytes, else a multipart upload buffering at most two
 *   5 MiB parts, aborted on error). S3 makes the new object visible only once complete, so readers never
 *   see a partial blob; an error of the body iterable stores nothing.
 * - The ETag is the object's S3 ETag without quotes (an MD5 hex, or `<md5>-<parts>` after a multipart
 *   upload).
 * - `head` answers null for any 404, which includes a missing bucket (HEAD responses carry no error code;
 *   `ping` tells that case apart). On AWS the credentials need `s3:ListBucket`, else a missing key is a
 *   403 and throws.
 * - SDK errors (network, access denied, missing bucket on get) propagate as the SDK's exceptions.
 */
export class S3BlobStore implements BlobStore {
  /** Bucket holding the blobs. */
  readonly bucket: string;
  /** Key prefix without leading or trailing `/`, `""` for none. */
  readonly prefix: string;
  /** The SDK client (exposed for tests and tooling); {@link S3BlobStore.close} destroys it. */
  readonly client: S3Client;
  readonly #sdk: AwsSdk;

  /**
   * A store over `bucket` under `prefix` (see {@link S3Location}; leading and trailing `/` are dropped).
   * Nothing is contacted here (call `ping()` at boot). Throws an Error when only one of the two static
   * keys is given or `endpoint` is not an http(s) URL.
   */
  constructor(location: S3Location, options: S3Options = {}) {
    this.bucket = location.bucket;
    this.prefix = location.prefix.replace(/^\/+|\/+$/g, "");
    const given = (v: string | undefined): string | undefined => (v === undefined || v === "" ? undefined : v);
    const endpoint = given(options.endpoint);
    const accessKeyId = given(options.accessKeyId);
    const secretAccessKey = given(options.secretAccessKey);
    const sessionToken = given(options.sessionToken);
    if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
      throw new Error("S3 storage: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be given together.");
    }
    if (endpoint !== undefined && !/^https?:\/\/[^/]/i.test(endpoint)) {
      throw new Error(`S3 storage: S3_ENDPOINT must be an http(s) URL, got '${endpoint}'.`);
    }
    const config: S3ClientConfig = {
      region: given(options.region) ?? "us-east-1",
      forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
      // Fail fast when the server does not answer a connection attempt, milliseconds.
      requestHandler: { connectionTimeout: 5000 },
    };
    if (endpoint !== undefined) {
      config.endpoint = endpoint;
      // Many S3-compatible servers reject or mis-store the SDK's default flexible checksums (CRC32
      // headers, aws-chunked trailers): send and check them only where the operation requires it.
      config.requestChecksumCalculation = "WHEN_REQUIRED";
      config.responseChecksumValidation = "WHEN_REQUIRED";
    }
    if (accessKeyId !== undefined && secretAccessKey !== undefined) {
      config.credentials = sessionToken === undefined
        ? { accessKeyId, secretAccessKey }
        : { accessKeyId, secretAccessKey, sessionToken };
    }
    this.#sdk = loadAwsSdk();
    this.client = new this.#sdk.s3.S3Client(config);
  }

  /** The object key of a (validated) blob key. */
  objectKey(key: string): string {
    assertBlobKey(key);
    return this.prefix === "" ? key : `${this.prefix}/${key}`;
  }

  async put(
    key: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    meta: { contentType: string },
  ): Promise<BlobInfo> {
    const Key = this.objectKey(key);
    assertContentType(meta.contentType);
    const params = { Bucket: this.bucket, Key, ContentType: meta.contentType };
    if (body instanceof Uint8Array) {
      const out = await this.client.send(
        new this.#sdk.s3.PutObjectCommand({ ...params, Body: body, ContentLength: body.byteLength }),
      );
      return this.putInfo(key, body.byteLength, meta.contentType, out.ETag);
    }
    const counter = { size: 0 };
    const upload = new this.#sdk.storage.Upload({
      client: this.client,
      params: { ...params, Body: Readable.from(checkedChunks(body, counter)) },
      partSize: PART_SIZE,
      queueSize: 1,
      leavePartsOnError: false,
    });
    const out = await upload.done();
    return this.putInfo(key, counter.size, meta.contentType, out.ETag);
  }

  /** The info of a just-written blob; asks the server when its answer had no ETag. */
  private async putInfo(key: string, size: number, contentType: string, etag: string | undefined): Promise<BlobInfo> {
    if (etag !== undefined && unquote(etag) !== "") return { key, size, contentType, etag: unquote(etag) };
    const info = await this.head(key);
    if (info === null) throw new Error(`S3 object for blob '${key}' vanished right after being written.`);
    return info;
  }

  async head(key: string): Promise<BlobInfo | null> {
    const Key = this.objectKey(key);
    try {
      const out = await this.client.send(new this.#sdk.s3.HeadObjectCommand({ Bucket: this.bucket, Key }));
      return {
        key,
        size: out.ContentLength ?? 0,
        contentType: out.ContentType ?? DEFAULT_CONTENT_TYPE,
        etag: unquote(out.ETag),
      };
    } catch (err) {
      if (s3ErrorOf(err).status === 404) return null;
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<BlobRead | null> {
    const Key = this.objectKey(key);
    if (range !== undefined) {
      const { start, end } = range;
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
        throw new RangeError(`Invalid byte range ${start}-${end}.`);
      }
    }
    let out;
    try {
      out = await this.client.send(
        new this.#sdk.s3.GetObjectCommand({
          Bucket: this.bucket,
          Key,
          Range: range === undefined ? undefined : `bytes=${range.start}-${range.end}`,
        }),
      );
    } catch (err) {
      const { status, name } = s3ErrorOf(err);
      if (status === 404 && name !== "NoSuchBucket") return null;
      if (status === 416 || name === "InvalidRange") {
        throw new RangeError(`Byte range start ${range?.start} is past the end of blob '${key}'.`, { cause: err });
      }
      throw err;
    }
    let body: Readable;
    const raw = out.Body;
    if (raw === undefined) body = Readable.from([]);
    else if (raw instanceof Readable) body = raw;
    else body = Readable.fromWeb(raw.transformToWebStream() as unknown as NodeReadableStream<Uint8Array>);

    // `bytes a-b/total` when the server honoured the Range; a server that ignored it sent everything.
    const contentRange = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(out.ContentRange ?? "");
    const size = contentRange !== null ? Number(contentRange[3]) : (out.ContentLength ?? 0);
    if (range !== undefined) {
      if (range.start >= size) {
        body.destroy();
        throw new RangeError(`Byte range start ${range.start} is past the blob's size ${size}.`);
      }
      const end = Math.min(range.end, size - 1);
      const sentStart = contentRange !== null ? Number(contentRange[1]) : 0;
      const sentEnd = contentRange !== null ? Number(contentRange[2]) : size - 1;
      if (sentStart !== range.start || sentEnd !== end) {
        // Some servers answer a wider range than asked (s3rver reads `bytes=0-0` as `bytes=0-`): cut
        // the asked bytes out of what came.
        if (sentStart > range.start || sentEnd < end) {
          body.destroy();
          throw new Error(`S3 answered bytes ${sentStart}-${sentEnd} of blob '${key}' for ${range.start}-${end}.`);
        }
        body = Readable.from(sliceOf(body, range.start - sentStart, end - sentStart), { objectMode: false });
      }
    }
    return {
      info: { key, size, contentType: out.ContentType ?? DEFAULT_CONTENT_TYPE, etag: unquote(out.ETag) },
      body,
    };
  }

  async delete(key: string): Promise<void> {
    const Key = this.objectKey(key);
    await this.client.send(new this.#sdk.s3.DeleteObjectCommand({ Bucket: this.bucket, Key }));
  }

  /**
   * {@link BlobStore.deleteMany}: DeleteObjects, 1000 keys a request (S3's most), quiet (only failures come
   * back). Every key is checked first; any object S3 could not delete fails the call, naming the first.
   */
  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertBlobKey(key);
    for (let i = 0; i < keys.length; i += 1000) {
      const Objects = keys.slice(i, i + 1000).map((k) => ({ Key: this.objectKey(k) }));
      const out = await this.client.send(new this.#sdk.s3.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects, Quiet: true } }));
      const failed = out.Errors ?? [];
      if (failed.length > 0) {
        const first = failed[0];
        throw new Error(`S3 could not delete ${failed.length} object(s) of bucket '${this.bucket}', e.g. '${first.Key ?? "?"}': ${first.Code ?? "error"} ${first.Message ?? ""}`.trim());
      }
    }
  }

  /**
   * HeadBucket: resolves when the bucket exists and the credentials may access it. Throws an Error naming
   * the bucket (the SDK's error as `cause`) otherwise, e.g. for a missing bucket or an unreachable server.
   */
  async ping(): Promise<void> {
    try {
      await this.client.send(new this.#sdk.s3.HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      const { status, name } = s3ErrorOf(err);
      const why = status === 404 ? "no such bucket" : `${name ?? "error"}${status === undefined ? "" : ` (HTTP ${status})`}: ${(err as Error).message}`;
      throw new Error(`S3 bucket '${this.bucket}' is not usable: ${why}.`, { cause: err });
    }
  }

  /** Closes the client's connections; the store must not be used afterwards. */
  close(): void {
    this.client.destroy();
  }
}
