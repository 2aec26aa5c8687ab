/**
 * Placement of a model's operations on devices: per step of the run order, the device that
 * runs it. The simplest placement takes, for each operation, the first device (in
 * preference order) that supports it; the cost-based partitioner refines this. A model some
 * operation of which no allowed device supports is refused, naming every such operation.
 */
import type { Device } from "../../devices/device.ts";
import type { Model } from "../../model/model.ts";
import { invalid } from "../../../nnapi/errors.ts";

/** Per operation (model order), the devices that support it, in preference order. */
export function supportingDevices(model: Model, devices: readonly Device[]): Device[][] {
  const support = devices.map((d) => d.supportedOperations(model));
  return model.operations.map((_, k) => devices.filter((_, d) => support[d][k]));
}

/** Fails with INVALID_ARGUMENT naming the operations no device supports. */
export function checkSupported(
  model: Model,
  supporting: readonly (readonly Device[])[],
  devices: readonly Device[],
): void {
  const unsupported = model.operations.flatMap((op, k) =>
    supporting[k].length === 0 ? [`operation ${k} (${op.type})`] : []
  );
  if (unsupported.length === 0) return;
  const first = model.operations.findIndex((_, k) => supporting[k].length === 0);
  throw invalid(
    `${unsupported.join(", ")} ${unsupported.length === 1 ? "is" : "are"} not supported by ${
      devices.map((d) => d.info.name).join(", ")
    }`,
    { path: ["operations", first] },
  );
}

/** Per step of the run order, the first supporting device's name. */
export function placeByPreference(model: Model, devices: readonly Device[]): string[] {
  const supporting = supportingDevices(model, devices);
  checkSupported(model, supporting, devices);
  return model.runOrder.map((k) => supporting[k][0].info.name);
}
