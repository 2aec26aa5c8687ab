/**
 * Blobs in an S3 bucket (any S3-compatible endpoint: NNSERVE_S3_ENDPOINT), for replicas that
 * share them. An object appears only once its upload completes, so nothing half-written is
 * ever readable; blobs past one part are sent as a multipart upload (aborted on failure).
 * Reads are checked against the hash in the key, as for every blob store.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { notFound } from "../nnapi/errors.ts";
import { blobKey, type BlobStore, keyHash, verified } from "./blob_store.ts";

/** Bytes of one part of a multipart upload (S3's minimum part is 5 MiB). */
export const PART_BYTES = 8 * 1024 * 1024;

/** Where the bucket is. Credentials and region default to the usual AWS variables. */
export interface S3BlobConfig {
  bucket: string;
  /** An S3-compatible endpoint (path-style addressing); AWS's own when absent. */
  endpoint?: string;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Keys are stored under this prefix (`nnserve/`, say) to share a bucket. */
  prefix?: string;
}

/** Blobs in an S3 bucket. */
export class S3BlobStore implements BlobStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;

  constructor(config: S3BlobConfig) {
    this.#client = new S3Client({
      region: config.region ?? Deno.env.get("AWS_REGION") ?? "us-east-1",
      ...(config.endpoint ? { endpoint: config.endpoint, forcePathStyle: true } : {}),
      ...(config.credentials ? { credentials: config.credentials } : {}),
      // Checksums only where S3 requires them: S3-compatible servers differ in the rest.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
    this.#bucket = config.bucket;
    this.#prefix = config.prefix ?? "";
  }

  async put(scope: string, parts: readonly Uint8Array[]): Promise<string> {
    const { key, bytes } = await blobKey(scope, parts);
    const Key = this.#prefix + key;
    if (bytes.byteLength <= PART_BYTES) {
      await this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key, Body: bytes }));
      return key;
    }
    const { UploadId } = await this.#client.send(
      new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key }),
    );
    try {
      const done: { ETag?: string; PartNumber: number }[] = [];
      for (let at = 0, n = 1; at < bytes.byteLength; at += PART_BYTES, n++) {
        const { ETag } = await this.#client.send(
          new UploadPartCommand({
            Bucket: this.#bucket,
            Key,
            UploadId,
            PartNumber: n,
            Body: bytes.subarray(at, at + PART_BYTES),
          }),
        );
        done.push({ ETag, PartNumber: n });
      }
      await this.#client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.#bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: done },
        }),
      );
    } catch (error) {
      await this.#client.send(
        new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key, UploadId }),
      ).catch(() => {});
      throw error;
    }
    return key;
  }

  async get(key: string): Promise<Uint8Array> {
    keyHash(key);
    try {
      const object = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }),
      );
      return await verified(key, await object.Body!.transformToByteArray());
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === "NoSuchKey" || name === "NotFound") throw notFound(`no blob ${key}`);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    keyHash(key);
    await this.#client.send(
      new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }),
    );
  }

  async *list(prefix: string): AsyncIterable<string> {
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix: this.#prefix + prefix,
          ContinuationToken: token,
        }),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key) yield object.Key.slice(this.#prefix.length);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Ends the client's connections. */
  close(): void {
    this.#client.destroy();
  }
}
