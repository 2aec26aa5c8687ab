/**
 * An S3-compatible server for tests: s3rver on a free loopback port, its objects in a
 * temporary directory, with one bucket.
 */
import S3rver from "s3rver";

/** A running test S3 server. */
export interface TestS3 {
  endpoint: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  bucket: string;
  stop(): Promise<void>;
}

/** Starts s3rver with `bucket`. */
export async function startS3(bucket: string): Promise<TestS3> {
  const directory = await Deno.makeTempDir({ prefix: "nnserve-s3-" });
  const server = new S3rver({
    port: 0,
    address: "127.0.0.1",
    directory,
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    // s3rver's fixed credentials.
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    bucket,
    async stop() {
      await server.close();
      await Deno.remove(directory, { recursive: true });
    },
  };
}
