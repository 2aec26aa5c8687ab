/** ARGMAX: the index of the largest value along an axis. */
import { argMinMaxOperation } from "./common/arg_min_max.ts";
import type { OperationDefinition } from "./operation.ts";

/** ARGMAX (HAL 1.2). */
export const argmax: OperationDefinition<"ARGMAX"> = argMinMaxOperation("ARGMAX", true);
