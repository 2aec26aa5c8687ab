/**
 * The HTTP server a user would write instead of nnserve: one onnxruntime-node
 * `InferenceSession` behind Node's `node:http`, taking the first input's raw float32 bytes
 * (extents in an `Input-Dimensions: 1,3,224,224` header) and answering the first output's
 * raw float32 bytes. Default session options; a third argument sets `intraOpNumThreads`
 * only (the latency rows, at the benchmark's thread counts).
 *
 * `deno run -A --config deno.json bench/peers/ort_http_server.ts <model.onnx> [port] [threads]`
 * prints `listening on http://127.0.0.1:<port>`.
 */
import { Buffer } from "node:buffer";
import http from "node:http";
import process from "node:process";
import * as ort from "onnxruntime-node";

const [modelPath, port = "0", threads] = process.argv.slice(2);
const session = await ort.InferenceSession.create(
  modelPath,
  threads ? { intraOpNumThreads: Number(threads) } : {},
);
const [inputName] = session.inputNames;
const [outputName] = session.outputNames;

const server = http.createServer(async (req, res) => {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const dims = String(req.headers["input-dimensions"]).split(",").map(Number);
    // A Float32Array view needs a 4-byte aligned offset; copy when the buffer's is not.
    const data = body.byteOffset % 4 === 0
      ? new Float32Array(body.buffer, body.byteOffset, body.byteLength / 4)
      : new Float32Array(new Uint8Array(body).buffer);
    const feeds = { [inputName]: new ort.Tensor("float32", data, dims) };
    const output = (await session.run(feeds))[outputName].data as Float32Array;
    res.writeHead(200, { "content-type": "application/octet-stream" });
    res.end(Buffer.from(output.buffer, output.byteOffset, output.byteLength));
  } catch (error) {
    res.writeHead(400, { "content-type": "text/plain" });
    res.end(String(error));
  }
});
server.listen(Number(port), "127.0.0.1", () => {
  const address = server.address();
  const bound = typeof address === "object" && address ? address.port : port;
  console.log(`listening on http://127.0.0.1:${bound}`);
});
