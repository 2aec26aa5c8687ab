/**
 * onnxruntime-web (its WebAssembly SIMD backend) in a Worker of its own: the wasm backend
 * takes its thread count once per module instance, so each thread count of the peers
 * benchmark gets a fresh worker. Messages: {model, input, threads} -> "ready", then
 * "run" -> the first output's values.
 */
/// <reference lib="deno.worker" />
import * as ort from "onnxruntime-web";

interface Prepare {
  model: Uint8Array;
  input: { name: string; shape: number[]; data: Float32Array };
  threads: number;
}

let run: (() => Promise<Float32Array>) | undefined;

self.onmessage = async (event: MessageEvent<Prepare | "run">) => {
  try {
    if (event.data === "run") {
      const output = await run!();
      self.postMessage({ output });
      return;
    }
    const { model, input, threads } = event.data;
    ort.env.wasm.numThreads = threads;
    const session = await ort.InferenceSession.create(model, {
      executionProviders: ["wasm"],
      graphOptimizationLevel: "all",
    });
    const feeds = { [input.name]: new ort.Tensor("float32", input.data, input.shape) };
    const name = session.outputNames[0];
    run = async () => (await session.run(feeds))[name].data as Float32Array;
    self.postMessage({ ready: true });
  } catch (error) {
    self.postMessage({ error: String((error as Error).stack ?? error) });
  }
};
