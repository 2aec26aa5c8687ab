/**
 * The messages between the executor pool (`pool.ts`), its executor workers
 * (`worker.ts`) and the executor spawner (`spawner.ts`).
 */
import type { DriverErrorDetails, ErrorStatus } from "../../../nnapi/errors.ts";
import type { ThreadBudget } from "../../../kernels/compute_lanes.ts";
import type { RunLimits } from "../control_flow/run.ts";
import type { RunInput, RunOutput } from "../../compilation/plan.ts";
import type { PreparedModel } from "../../compilation/plan.ts";
import type { StepTiming, UnitArtifact } from "../../compilation/plan.ts";

/** Messages to a worker. */
export type WorkerRequest =
  | {
    kind: "run";
    id: number;
    compilation: string;
    prepared?: PreparedModel;
    inputs: RunInput[];
    /** Time every host operation apart (profiling), not each plan step. */
    perOperation?: boolean;
    /**
     * Only prepare the plan's device units (no inputs, no outputs): the result's steps are
     * the units that could not be prepared.
     */
    prepareOnly?: boolean;
    /** Loop timeout and deadline, which WHILE loops check between iterations. */
    limits?: RunLimits;
    /** The process's kernel thread budget as this executor uses it (`compute_lanes.ts`). */
    threads?: ThreadBudget;
  }
  | { kind: "unload"; compilation: string }
  /** Set the thread budget and start the compute lanes now; answered with "warmed". */
  | { kind: "warm"; threads: ThreadBudget };

/** Messages from a worker. */
export type WorkerResponse =
  | {
    kind: "result";
    id: number;
    outputs: RunOutput[];
    onDeviceUs: number;
    steps: StepTiming[];
    /** Kernel calls of the run that were split across compute lanes. */
    splitCalls: number;
    /** After `prepareOnly`: what the prepared units left for the compilation cache. */
    artifacts?: UnitArtifact[];
    /** A batched run's inputs as it stacked them (`stacked_inputs.ts`), given back. */
    stackedInputs?: RunInput[];
  }
  | {
    kind: "error";
    id: number;
    status: ErrorStatus;
    message: string;
    details: DriverErrorDetails;
    stackedInputs?: RunInput[];
  }
  /** After "warm": how many compute lanes are ready to take calls. */
  | { kind: "warmed"; lanes: number };

/** The first message to an executor worker: the port it serves the pool on. */
export interface ExecutorConnect {
  port: MessagePort;
}

/** Messages to the executor spawner; `executor` names one spawned executor. */
export type SpawnerRequest =
  | { kind: "spawn"; executor: number }
  | { kind: "terminate"; executor: number };

/** Messages from the executor spawner. */
export type SpawnerResponse =
  | { kind: "spawned"; executor: number; port: MessagePort }
  | { kind: "failed"; executor: number; message: string };
