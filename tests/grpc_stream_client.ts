/**
 * A client process for tests/grpc_test.ts, killed mid-stream: opens a ModelStreamInfer
 * stream to `127.0.0.1:<port>` (argument 1) with the key (argument 2), sends ten requests to
 * model "rows" (ADD of two float32 rows), prints "sent", and waits to be killed.
 */
import { GrpcClient } from "../client/grpc.ts";

const [port, key] = Deno.args;
const client = new GrpcClient({ address: `127.0.0.1:${port}`, apiKey: key });
const stream = client.stream();
for (let id = 0; id < 10; id++) {
  stream.infer("rows", [
    { name: "input0", datatype: "FP32", shape: [1], data: new Float32Array([id]) },
    { name: "input1", datatype: "FP32", shape: [1], data: new Float32Array([1]) },
  ]).catch(() => {});
}
console.log("sent");
await new Promise(() => {}); // until killed
