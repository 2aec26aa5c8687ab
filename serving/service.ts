/**
 * What a service adds to the NNAPI driver: ONNX import (the converter, then the driver
 * registers the NNAPI model), models served by name and version (`/v2`), and announcements
 * between replicas. Routes reach the driver through `Service.driver` and these through the
 * service; nothing under `driver/` imports this layer.
 */
import type { OnnxConversionOptions, OnnxTensorInfo } from "../converter/onnx/convert.ts";
import { Driver } from "../driver/driver.ts";
import type { Change, DriverConfig } from "../driver/driver_config.ts";
import { DEFAULT_MODEL_LIMITS, type ModelInfo, type ModelSource } from "../driver/model/models.ts";
import {
  DEFAULT_IMPORT_LIMITS,
  type ImportLimits,
  type ImportRequest,
  OnnxImports,
} from "./onnx_imports.ts";
import { ReplicaChanges } from "./replica_changes.ts";
import { ServedModels } from "./served_models.ts";

/**
 * Options of an ONNX import: the conversion's (shapes, values), and a name and version for
 * the model.
 */
export interface OnnxImportOptions extends OnnxConversionOptions, Omit<ModelSource, "onnx"> {}

/** What a service is made of: the driver's configuration and its ONNX imports' limits. */
export interface ServiceConfig extends Omit<DriverConfig, "announce"> {
  /**
   * ONNX conversions at once, the time one may take and the bytes it may fold
   * (NNSERVE_MAX_CONCURRENT_IMPORTS, NNSERVE_IMPORT_TIMEOUT, NNSERVE_MAX_IMPORT_FOLDED_BYTES);
   * the graph's size and each tensor's elements are bounded by `modelLimits`.
   */
  imports?: Partial<ImportLimits>;
}

/** The driver with what the service adds to it: one per server process. */
export class Service {
  readonly driver: Driver;
  /** Models by name and version, as the Open Inference Protocol serves them. */
  readonly served: ServedModels;
  /** What this replica tells the others, and hears from them. */
  readonly #changes: ReplicaChanges;
  /** ONNX conversions: how many at once, for how long, how large. */
  readonly #imports: OnnxImports;

  constructor(config: ServiceConfig) {
    const { imports, ...driverConfig } = config;
    this.#changes = new ReplicaChanges(config.kv, (change) => this.#heard(change));
    this.driver = new Driver({ ...driverConfig, announce: (change) => this.#announce(change) });
    this.served = new ServedModels(this.driver);
    const model = { ...DEFAULT_MODEL_LIMITS, ...config.modelLimits };
    this.#imports = new OnnxImports({ ...DEFAULT_IMPORT_LIMITS, ...imports }, {
      maxOperations: model.maxOperations,
      maxOperands: model.maxOperands,
      maxTensorElements: model.maxTensorElements,
    });
  }

  /** A change of this replica: forgets its served models here at once, then tells every replica. */
  #announce(change: Change): Promise<void> {
    if (change.kind !== "memory-deleted") this.served.changed(change.owner);
    return this.#changes.announce(change);
  }

  /** A change announced by a replica (this one included): drops what it made stale. */
  #heard(change: Change): void {
    this.driver.heard(change);
    if (change.kind !== "memory-deleted") this.served.changed(change.owner);
  }

  /**
   * Converts an ONNX file into an NNAPI model (in a worker) and registers it, with the ONNX
   * names, types and shapes of its inputs and outputs. `request` bounds the conversion: it
   * stops when its signal aborts (the client left) or its time limit passes, and a client's
   * import finding every conversion slot taken is refused at once (`whenBusy: "refuse"`).
   */
  async importOnnx(
    owner: string,
    bytes: Uint8Array,
    options: OnnxImportOptions = {},
    request: ImportRequest = {},
  ): Promise<ModelInfo> {
    const { name, version, repository, ...conversionOptions } = options;
    const conversion = await this.#imports.convert(bytes, conversionOptions, request);
    const port = (p: OnnxTensorInfo) => ({
      name: p.name,
      elementType: p.elementType,
      shape: p.shape,
    });
    return this.driver.registerModel(owner, conversion.model, {
      name,
      version,
      repository,
      onnx: {
        opset: conversion.opset,
        layout: conversion.layout,
        notes: conversion.notes,
        inputs: conversion.inputs.map(port),
        outputs: conversion.outputs.map(port),
      },
    });
  }

  /** Stops ONNX conversions and the executor workers, and stops hearing other replicas. */
  async close(): Promise<void> {
    this.#imports.close();
    await this.driver.close();
    await this.#changes.close();
  }
}
