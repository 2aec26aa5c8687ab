/**
 * Executor worker: keeps the executables of the compilations it was sent and runs them off
 * the server's event loop. Its first message is the port it serves the pool on (the pool or
 * the executor spawner created it); messages are defined in `protocol.ts`.
 */
/// <reference lib="deno.worker" />
import { DriverError } from "../../../nnapi/errors.ts";
import { Executable } from "../executable.ts";
import { runMeasuredAsync } from "../measured_run.ts";
import { stacked } from "../stacked_inputs.ts";
import type { ExecutorConnect, WorkerRequest, WorkerResponse } from "./protocol.ts";
import type { RunOutput } from "../../compilation/plan.ts";
import { toBytes } from "../../../nnapi/tensor.ts";
import {
  lanesReady,
  readyLaneCount,
  setThreadBudget,
  splitCallCount,
} from "../../../kernels/compute_lanes.ts";
import { startComputeLanes } from "../../../kernels/simd_runtime.ts";

const executables = new Map<string, Executable>();
/** The job this executor is running (one at a time), until it settles. */
let running: Promise<void> = Promise.resolve();

/** How long an executor waits for its compute lanes to start before it reports them. */
const LANE_START_WAIT_MS = 30_000;

self.onmessage = (event: MessageEvent<ExecutorConnect>) => {
  const { port } = event.data;
  self.onmessage = null;
  port.onmessage = (request: MessageEvent<WorkerRequest>) => {
    const served = serve(request.data, (message, transfer = []) => {
      port.postMessage(message, transfer);
    });
    if (request.data.kind === "run") running = served.then(() => {}, () => {});
  };
};

async function serve(
  request: WorkerRequest,
  respond: (message: WorkerResponse, transfer?: Transferable[]) => void,
): Promise<void> {
  if (request.kind === "unload") {
    // Forgotten at once (a plan sent again is new), released once the job running settles:
    // the pool may unload a compilation while one of its runs or preparations is under way.
    const executable = executables.get(request.compilation);
    executables.delete(request.compilation);
    if (executable) running.finally(() => executable.release());
    return;
  }
  if (request.kind === "warm") {
    setThreadBudget(request.threads);
    if (startComputeLanes()) {
      // Poll until the lanes have started (an executor with a run to do is served first).
      await lanesReady(request.threads.maxLanes, LANE_START_WAIT_MS);
    }
    respond({ kind: "warmed", lanes: readyLaneCount() });
    return;
  }
  // A batched run's blocks are stacked here, off the driver's thread, and given back.
  const inputs = request.inputs.map(stacked);
  const stackedInputs = request.inputs.some((i) => i.stacked) ? inputs : undefined;
  const given = stackedInputs
    ? { stackedInputs, transfer: stackedInputs.map((i) => toBytes(i.data!).buffer as ArrayBuffer) }
    : { transfer: [] };
  try {
    setThreadBudget(request.threads);
    let executable = executables.get(request.compilation);
    if (!executable) {
      if (!request.prepared) {
        throw new DriverError("GENERAL_FAILURE", "executor lost its plan");
      }
      executable = new Executable(request.prepared);
      executables.set(request.compilation, executable);
    }
    if (request.prepareOnly) {
      const { failed, artifacts } = await executable.prepareUnits();
      // Copies: the runnables keep their own artifacts.
      const copies = artifacts.map((a) => ({ step: a.step, bytes: a.bytes.slice() }));
      respond(
        {
          kind: "result",
          id: request.id,
          outputs: [],
          onDeviceUs: 0,
          steps: failed,
          splitCalls: 0,
          artifacts: copies,
        },
        copies.map((a) => a.bytes.buffer as ArrayBuffer),
      );
      return;
    }
    const splitsBefore = splitCallCount();
    const { outputs, onDeviceUs, steps } = await runMeasuredAsync(executable, inputs, {
      perOperation: request.perOperation,
      limits: request.limits,
    });
    // Only each output's own bytes cross the thread boundary: those that are not a whole
    // buffer of their own are copied first.
    const copies = outputs.map((o) => ({
      shape: o.shape,
      data: ownsBuffer(o.data) ? o.data : o.data.slice(),
    }));
    respond(
      {
        kind: "result",
        id: request.id,
        outputs: copies,
        onDeviceUs,
        steps,
        splitCalls: splitCallCount() - splitsBefore,
        ...(given.stackedInputs ? { stackedInputs: given.stackedInputs } : {}),
      },
      [
        ...new Set([
          ...copies.map((o) => toBytes(o.data).buffer as ArrayBuffer),
          ...given.transfer,
        ]),
      ],
    );
  } catch (error) {
    const failure = error instanceof DriverError
      ? { status: error.status, message: error.message, details: error.details }
      : { status: "GENERAL_FAILURE" as const, message: String(error), details: {} };
    respond(
      {
        kind: "error",
        id: request.id,
        ...failure,
        ...(given.stackedInputs ? { stackedInputs: given.stackedInputs } : {}),
      },
      given.transfer,
    );
  }
}

/** Whether `data` is all of a plain ArrayBuffer (transferable without copying). */
function ownsBuffer(data: RunOutput["data"]): boolean {
  return data.buffer instanceof ArrayBuffer && data.byteOffset === 0 &&
    data.byteLength === data.buffer.byteLength;
}
