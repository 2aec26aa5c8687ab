/**
 * What a service adds to the NNAPI driver: ONNX import (the converter, then the driver
 * registers the NNAPI model), models served by name and version (`/v2`), and announcements
 * between replicas. Routes reach the driver through `Service.driver` and these through the
 * service; nothing under `driver/` imports this layer.
 */
import type { OnnxConversionOptions, OnnxTensorInfo } from "../converter/onnx/convert.ts";
import { convertOnnxInWorker } from "../converter/onnx/convert_in_worker.ts";
import { type Change, Driver, type DriverConfig } from "../driver/driver.ts";
import type { ModelInfo, ModelSource } from "../driver/model/models.ts";
import { ReplicaChanges } from "./replica_changes.ts";
import { ServedModels } from "./served_models.ts";

/**
 * Options of an ONNX import: the conversion's (shapes, values), and a name and version for
 * the model.
 */
export interface OnnxImportOptions extends OnnxConversionOptions, Omit<ModelSource, "onnx"> {}

/** The driver with what the service adds to it: one per server process. */
export class Service {
  readonly driver: Driver;
  /** Models by name and version, as the Open Inference Protocol serves them. */
  readonly served: ServedModels;
  /** What this replica tells the others, and hears from them. */
  readonly #changes: ReplicaChanges;

  constructor(config: Omit<DriverConfig, "announce">) {
    this.#changes = new ReplicaChanges(config.kv, (change) => this.#heard(change));
    this.driver = new Driver({ ...config, announce: (change) => this.#announce(change) });
    this.served = new ServedModels(this.driver);
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
   * names, types and shapes of its inputs and outputs.
   */
  async importOnnx(
    owner: string,
    bytes: Uint8Array,
    options: OnnxImportOptions = {},
  ): Promise<ModelInfo> {
    const { name, version, repository, ...conversionOptions } = options;
    const conversion = await convertOnnxInWorker(bytes, conversionOptions);
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

  /** Stops the executor workers and stops hearing other replicas. */
  async close(): Promise<void> {
    this.driver.close();
    await this.#changes.close();
  }
}
