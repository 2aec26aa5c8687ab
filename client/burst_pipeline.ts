/**
 * Pipelined computing over a burst (`Burst.computePipelined`): frames are taken from a
 * stream only while the window has room, so a camera or a file reader is never read ahead
 * of what the service can hold, and results are delivered strictly in frame order.
 */
import type { BurstComputeOptions, BurstInput } from "./burst_codec.ts";
import type { ExecutionResult } from "./execution.ts";

/** What pipelining needs of a burst. */
export interface Pipelined {
  compute(inputs: readonly BurstInput[], options: BurstComputeOptions): Promise<ExecutionResult>;
  readonly isClosed: boolean;
}

/** How frames are pipelined. */
export interface PipelineOptions {
  /** Called with each result in frame order, awaited before the next. */
  onResult: (result: ExecutionResult, index: number) => void | Promise<void>;
  /** Resolves when the burst's window has room (or the burst closed). */
  room: () => Promise<void>;
  /** The options of every request. */
  compute: BurstComputeOptions;
}

/**
 * Streams frames through the burst, up to its window in flight. Stops at the first failure
 * (of a request or of `onResult`), which it throws after the requests already sent have
 * settled. Returns the number of results delivered.
 */
export async function runPipelined(
  burst: Pipelined,
  frames: Iterable<readonly BurstInput[]> | AsyncIterable<readonly BurstInput[]>,
  options: PipelineOptions,
): Promise<number> {
  const { onResult } = options;
  let delivered = 0;
  let failure: { error: unknown } | undefined;
  let chain = Promise.resolve();
  let index = 0;
  for await (const inputs of frames) {
    await options.room();
    if (failure || burst.isClosed) break;
    const k = index++;
    const pending = burst.compute(inputs, options.compute);
    pending.catch(() => {});
    chain = chain.then(async () => {
      let result: ExecutionResult;
      try {
        result = await pending;
      } catch (error) {
        failure ??= { error };
        return;
      }
      if (failure) return;
      try {
        await onResult(result, k);
        delivered++;
      } catch (error) {
        failure ??= { error };
      }
    });
  }
  await chain;
  if (failure) throw failure.error;
  return delivered;
}
